"""The person's own settings: how they hear about usage alerts."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from . import services
from .models import NotificationPreference


@login_required
def notification_settings(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        try:
            services.preference_set(user=request.user,
                                    usage_alerts=request.POST.get("usage_alerts", ""))
        except ValidationError as error:
            for field_messages in error.message_dict.values():
                for message in field_messages:
                    messages.error(request, message)
        else:
            messages.success(request, "Saved.")
            return redirect("notification-settings")
    preference = NotificationPreference.objects.filter(user=request.user).first()
    return render(request, "allocations/notification_settings.html", {
        "choices": NotificationPreference.Usage.choices,
        "current": preference.usage_alerts if preference else NotificationPreference.Usage.EACH,
    })
