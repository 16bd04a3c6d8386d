"""A run's lifecycle: start, dispatch, execute, record, finish; machines and fair share."""
