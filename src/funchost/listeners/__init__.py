"""Shared machinery for every polling listener: delay strategies, the poll loop, renewal."""
