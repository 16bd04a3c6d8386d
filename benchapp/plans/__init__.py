"""Plan documents: validation, pre-run checks, estimates, the scenario templates."""
