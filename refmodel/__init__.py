"""Executable reference model of the P4 bottleneck pipeline (see p4src/)."""

from .constants import Aqm, Decision, Reason, TrafficClass
from .params import ConfigError, PipelineParams, pipeline_params
from .pipeline import Pipeline, Result, Route

__all__ = ["Aqm", "Decision", "Reason", "TrafficClass", "ConfigError", "PipelineParams", "pipeline_params",
           "Pipeline", "Result", "Route"]
