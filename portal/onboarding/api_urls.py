from django.urls import path

from .api import FlowView

urlpatterns = [path("onboarding/flow/", FlowView.as_view(), name="api-onboarding-flow")]
