"""Binding plug-ins: one module per binding type, each exposing ``SUPPORT``."""
