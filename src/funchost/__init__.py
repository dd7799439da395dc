"""funchost: run unmodified Azure Functions Python v2 apps outside Azure."""

__version__ = "0.1.0"
