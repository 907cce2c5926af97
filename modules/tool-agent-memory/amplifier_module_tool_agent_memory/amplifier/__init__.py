"""The Amplifier glue: mount, the tool adapters and the session hooks.

The only part of the package that imports amplifier-core; everything below it is plain
services that receive what they use.
"""
