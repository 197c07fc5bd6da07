"""Named configurations shipped with the package (``vta.Config.load(name)``)."""
