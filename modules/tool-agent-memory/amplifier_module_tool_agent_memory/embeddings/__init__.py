"""Text embeddings: the offline local model (default), any fastembed model, or an OpenAI-compatible server.

``providers`` holds the providers and the process-wide cached embedder; ``int8_graph``
rewrites the shipped int8 model once so its weights run through int8 kernels.
"""

from .providers import LOCAL_DIM, LOCAL_MODEL_ID, CachedEmbedder, Embedder, get_embedder

__all__ = ["LOCAL_DIM", "LOCAL_MODEL_ID", "CachedEmbedder", "Embedder", "get_embedder"]
