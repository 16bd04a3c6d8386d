"""Cloud rows: the resources Benchboard created at a provider (written before
the create call, benchapp.cloud.provisioning) and the editable price table
(benchapp.cloud.pricing).

Re-exported by benchapp.models; related models are named by string so this
module imports no other model module.
"""

from __future__ import annotations

from django.db import models

from runners.providers import price_tables


class CloudResource(models.Model):
    """A cloud resource Benchboard created. Written BEFORE the create call so a
    crash between the call and its response still leaves a row to reap."""

    team = models.ForeignKey(
        "benchapp.Team", on_delete=models.CASCADE, related_name="cloud_resources"
    )
    run = models.ForeignKey(
        "benchapp.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="cloud_resources",
    )
    target_name = models.CharField(max_length=100, blank=True)
    provider = models.CharField(max_length=20)
    kind = models.CharField(max_length=40)  # db_instance, instance, volume, key_pair, ...
    token = models.CharField(max_length=200)  # client token / deterministic identifier
    cloud_id = models.CharField(max_length=200, blank=True)
    region = models.CharField(max_length=40, blank=True)
    handle = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=20, default="creating")  # creating|live|deleted|error
    price_per_hour = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "kind", "token"], name="one_resource_per_token"
            )
        ]


class PriceEntry(models.Model):
    """One editable row of the price table (benchapp.cloud.pricing reads them all).

    `table` is one of the providers' price tables (Provider.PRICE_TABLES),
    `key` the class, type or storage kind it prices. Seeded from the
    providers' default prices (illustrative USD).
    """

    TABLES = price_tables()

    table = models.CharField(max_length=40, choices=TABLES)
    key = models.CharField(max_length=60)
    price = models.DecimalField(max_digits=12, decimal_places=6)
    currency = models.CharField(max_length=3, default="USD")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["table", "key"]
        constraints = [models.UniqueConstraint(fields=["table", "key"], name="one_price_per_key")]

    def __str__(self):
        return f"{self.table} {self.key}: {self.price} {self.currency}"
