"""What every AWS provider declares alike (aws_rds, aws_ec2 subclass AwsProvider)."""

from __future__ import annotations

import os

from runners.providers import aws_reaper
from runners.providers.base import Provider, ProvisionContext


class AwsProvider(Provider):
    """What every AWS provider declares alike: one account (a team Credential
    of kind "aws", or the worker's own identity), its region setting, and
    the account's sweep (EC2 and RDS at once, runners.providers.aws_reaper)."""

    SWEEP_GROUP = "aws"
    CREDENTIAL_FIELD, CREDENTIAL_KIND, CREDENTIAL_LABEL = "aws_credential", "aws", "AWS access key"

    def default_region(self) -> str:
        """AWS_DEFAULT_REGION (boto3's own variable), else us-east-1.

        The endpoint needs no setting here: a ProvisionContext without an
        endpoint_url lets boto3 read AWS_ENDPOINT_URL (moto in tests) itself.
        """
        return os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"

    def sweep(self, ctx: ProvisionContext, runs: set[str]) -> list:
        return aws_reaper.sweep(ctx, runs)
