"""The zTensor suite (`--suite zt`): the corpus against the package, files the package writes read by ztfs, mutations, shard families."""
