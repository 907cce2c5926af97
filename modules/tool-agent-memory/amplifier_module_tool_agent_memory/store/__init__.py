"""Storage: one private store per identity, on embedded Qdrant Edge (``edge``) or a Qdrant server (``server``).

Services see a store only through its collections (``Collection``); ``memtrim`` gives
memory back to the OS after large builds.
"""
