"""The local viewer: ``agent-memory ui`` shows one identity's memories, working memory, plans and activity.

A face like the others: :mod:`.server` checks every request (:mod:`.security`), :mod:`.views`
validates it and asks the services, and the page under ``static/`` renders the answers as text.
Served by the standard library's HTTP server on 127.0.0.1 only: no extra dependency, no build
chain, nothing loaded from the internet.
"""
