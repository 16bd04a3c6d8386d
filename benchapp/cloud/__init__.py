"""Provisioned resources: their lifecycle, prices, telemetry and clean-up."""
