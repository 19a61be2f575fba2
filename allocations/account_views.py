"""The person's own settings: how they hear about usage alerts."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from core.refusals import refused_to

from . import services
from .models import NotificationPreference

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AuthUser


@login_required
@refused_to("notification-settings")
def notification_settings(request: HttpRequest) -> HttpResponse:
    user = cast("AuthUser", request.user)  # login_required
    if request.method == "POST":
        services.preference_set(user=user, usage_alerts=request.POST.get("usage_alerts", ""))
        messages.success(request, "Saved.")
        return redirect("notification-settings")
    preference = NotificationPreference.objects.filter(user=user).first()
    return render(
        request,
        "allocations/notification_settings.html",
        {
            "choices": NotificationPreference.Usage.choices,
            "current": preference.usage_alerts if preference else NotificationPreference.Usage.EACH,
        },
    )
