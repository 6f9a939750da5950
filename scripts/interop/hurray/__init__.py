"""The Hurray suite (`--suite hurray`): files pyhurray writes and the corpus, read by ztfs and by pyhurray."""
