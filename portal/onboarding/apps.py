from django.apps import AppConfig


class OnboardingConfig(AppConfig):
    name = "portal.onboarding"
    label = "onboarding"
