"""Teams and access, API tokens, operators, credentials, redaction, the app's guard."""
