"""Work on a whole store, outside the tool calls: moving memories in and out (``transfer``)."""
