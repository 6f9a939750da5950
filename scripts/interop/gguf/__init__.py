"""The GGUF suite (`--suite gguf`): files the gguf package writes and the corpus, read by ztfs and by GGUFReader."""
