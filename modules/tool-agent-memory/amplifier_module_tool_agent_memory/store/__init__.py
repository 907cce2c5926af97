"""Storage: one private store per identity, on embedded Qdrant Edge (``edge``) or a Qdrant server (``server``).

Services see a store only through its collections (``contract.Collection``). One job per module:
``contract`` (the collection contract and the shared write/read path), ``edge`` (opening and
locking an embedded store), ``edge_settings`` (shard settings), ``edge_collection`` (a shard as a
collection), ``rebuild`` (journal replay and rebuild), ``journal``, ``server`` (the server
backend), ``registry`` (the process's refcounted open stores, both backends), ``purge``,
``space``, ``files``; ``memtrim`` gives memory back to the OS after large builds.
"""
