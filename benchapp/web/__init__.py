"""Pages, the REST API, forms and serializers: access helper -> form -> service."""
