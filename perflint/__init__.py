"""perflint: find PyTorch performance antipatterns without importing or running the code."""

__version__ = "0.1.0"
