"""The team's alert notifications: webhook and email settings (team admins)
and the latest deliveries. The webhook secret is write-only."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.validators import validate_email
from django.shortcuts import redirect, render

from benchapp.accounts.access import ADMIN, current_team, require_role
from benchapp.histories import notify
from benchapp.models import AlertDelivery, Notifier


class NotifierForm(forms.Form):
    webhook_url = forms.URLField(
        required=False, max_length=500, assume_scheme="https", label="Webhook URL"
    )
    secret = forms.CharField(
        required=False,
        max_length=200,
        label="Webhook secret",
        widget=forms.PasswordInput(render_value=False),
        help_text="signs each POST (HMAC-SHA256); leave empty to keep the current one",
    )
    clear_secret = forms.BooleanField(required=False, label="Remove the secret")
    emails = forms.CharField(
        required=False, max_length=2000, label="Email recipients", help_text="comma-separated"
    )
    only_bad = forms.BooleanField(required=False, label="Only changes for the worse")

    def clean_webhook_url(self):
        url = self.cleaned_data["webhook_url"]
        if url and not url.startswith(("http://", "https://")):
            raise forms.ValidationError("http:// or https:// only")
        return url

    def clean_emails(self):
        emails = [
            e.strip() for e in self.cleaned_data["emails"].replace(";", ",").split(",") if e.strip()
        ]
        for email in emails:
            validate_email(email)
        return ", ".join(emails)


@login_required
def notification_settings(request):
    team = current_team(request)
    require_role(request.user, team, ADMIN)
    notifier = Notifier.objects.filter(team=team).first() or Notifier(team=team)
    form = NotifierForm(
        request.POST or None,
        initial={
            "webhook_url": notifier.webhook_url,
            "emails": notifier.emails,
            "only_bad": notifier.only_bad,
        },
    )
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        notify.save_settings(
            notifier,
            webhook_url=d["webhook_url"],
            emails=d["emails"],
            only_bad=d["only_bad"],
            secret=d["secret"] or None,
            clear_secret=d["clear_secret"],
        )
        messages.success(request, "Notification settings saved.")
        return redirect("notification_settings")
    deliveries = AlertDelivery.objects.filter(alert__team=team).select_related(
        "alert", "alert__plan"
    )[:30]
    return render(
        request,
        "history/notifications.html",
        {
            "team": team,
            "form": form,
            "notifier": notifier,
            "deliveries": deliveries,
            "has_secret": bool(notifier.webhook_secret),
        },
    )
