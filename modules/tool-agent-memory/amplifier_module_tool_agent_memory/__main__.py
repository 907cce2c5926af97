"""``python -m amplifier_module_tool_agent_memory``: the ``agent-memory`` command without its script.

Amplifier installs the module into the app's own environment, where the ``agent-memory`` script
is not on the user's PATH; that environment's Python can still run the command this way.
"""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
