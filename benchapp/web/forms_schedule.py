"""The schedule form of a plan: once at a time, or repeatedly (cron)."""

from __future__ import annotations

from django import forms
from django.utils import timezone

from benchapp.histories.scheduling import check_interval, parse_cron


class ScheduleForm(forms.Form):
    AT, CRON = "at", "cron"
    kind = forms.ChoiceField(
        choices=[(AT, "Once, at a given time"), (CRON, "Repeatedly (cron)")],
        widget=forms.RadioSelect,
        initial=AT,
    )
    when = forms.DateTimeField(
        required=False,
        label="At",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    cron = forms.CharField(
        required=False,
        label="Cron",
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "30 2 * * 1-5"}),
        help_text="minute hour day-of-month month day-of-week",
    )

    def clean(self):
        data = super().clean()
        if data.get("kind") == self.AT:
            when = data.get("when")
            if not when:
                self.add_error("when", "Choose a date and time.")
            elif when <= timezone.now():
                self.add_error("when", "This time is in the past.")
        elif data.get("kind") == self.CRON:
            try:
                data["cron"] = parse_cron(data.get("cron", ""))
                check_interval(data["cron"])
            except ValueError as exc:
                self.add_error("cron", str(exc))
        return data


# ------------------------------------------------------------ helpers
