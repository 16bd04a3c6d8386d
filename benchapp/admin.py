from django.contrib import admin

from benchapp import models


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 1


@admin.register(models.Team)
class TeamAdmin(admin.ModelAdmin):
    inlines = [MembershipInline]
    list_display = [
        "name",
        "max_cloud_resources",
        "max_run_cost",
        "max_running_cells",
        "max_active_runs",
    ]


@admin.register(models.Credential)
class CredentialAdmin(admin.ModelAdmin):
    # The secret is never shown: only its fingerprint.
    list_display = ["name", "team", "kind", "fingerprint", "updated_at"]
    readonly_fields = ["fingerprint", "updated_at"]
    exclude = ["encrypted"]


@admin.register(models.Target)
class TargetAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "kind", "host", "port"]
    list_filter = ["kind", "team"]


@admin.register(models.Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "tool", "updated_at"]


class CellInline(admin.TabularInline):
    model = models.Cell
    fields = ["index", "key", "repeat", "status", "phase", "attempt", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    show_change_link = True


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "team", "tool", "status", "created_at"]
    list_filter = ["status", "tool", "team"]
    inlines = [CellInline]


@admin.register(models.Cell)
class CellAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "key", "repeat", "status", "attempt"]
    list_filter = ["status"]
    raw_id_fields = ["run"]


@admin.register(models.CellMeasurements)
class CellMeasurementsAdmin(admin.ModelAdmin):
    list_display = ["cell", "attempt", "count"]
    raw_id_fields = ["run", "cell"]


class OutputBlobInline(admin.TabularInline):
    """Where each stream's object is; read-only (the store and the row go together)."""

    model = models.OutputBlob
    fields = readonly_fields = ["stream", "key", "size", "sha256", "expired_at"]
    extra = 0
    can_delete = False


@admin.register(models.Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["cell", "attempt", "phase", "exit_code"]
    raw_id_fields = ["cell"]
    inlines = [OutputBlobInline]


@admin.register(models.Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "created_at", "shared_at"]
    exclude = ["share_token_hash"]


@admin.register(models.CloudResource)
class CloudResourceAdmin(admin.ModelAdmin):
    list_display = ["kind", "cloud_id", "provider", "state", "run", "created_at", "deleted_at"]
    list_filter = ["state", "provider", "kind"]


@admin.register(models.PriceEntry)
class PriceEntryAdmin(admin.ModelAdmin):
    list_display = ["table", "key", "price", "currency", "updated_at"]
    list_editable = ["price"]
    list_filter = ["table"]
