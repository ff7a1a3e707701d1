from django.urls import path

from project import views

urlpatterns = [
    path("healthz", views.healthz),
    path("limited", views.limited),
]
