"""The pack suite (`--suite pack`): what `ztfs pack` writes, against the package, `ztensor.convert` and each source's own reader."""
