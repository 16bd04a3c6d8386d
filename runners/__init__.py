"""Benchboard runners: tools, executors and providers, without Django.

benchapp calls into this package with plain values and gets dataclasses back
(see ../shared/DESIGN.md). Nothing here may import Django.
"""
