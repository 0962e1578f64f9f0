"""The one error a bad configuration raises (re-exported by ``refmodel.params``)."""


class ConfigError(ValueError):
    """A configuration value that the data plane cannot take."""
