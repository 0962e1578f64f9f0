"""P4Runtime controller: installs the pipeline, configures and tunes the AQM, reads counters."""
