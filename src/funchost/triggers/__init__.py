"""Trigger plug-ins: one package per trigger type, each exposing ``SUPPORT``."""
