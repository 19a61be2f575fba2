"""Pages: /recommend/ (the recommender as a shareable GET form) and /benchmarks/ (browse)."""

from django.urls import path

from . import views

urlpatterns = [
    path("recommend/", views.recommend_page, name="recommend"),
    path("benchmarks/", views.benchmark_list, name="benchmark-list"),
]
