"""Admin for the chart. Each save is checked against the whole graph *as it would be after the
save* (the stored chart with the form's edits applied), so a cycle, a choice that leads nowhere
or an unreachable node is refused with a message naming the node, before anything is written.
Published charts get every rule; drafts only "no cycle" until they are published."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import ForeignKey, Max
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.errors import Invalid

from . import services
from .graph import Edge, oref, problems, qref
from .models import Choice, Flowchart, Outcome, Question
from .selectors import flowchart_graph


def _refuse_if_broken(flowchart: Flowchart, graph) -> None:
    found = problems(graph, cycles_only=flowchart.status != Flowchart.Status.PUBLISHED)
    if found:
        raise ValidationError(found)


class ChoiceFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        question: Question = self.instance
        if not question.flowchart_id or any(self.errors):
            return
        flowchart = question.flowchart
        edges = []
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data or data.get("DELETE"):
                continue
            nxt, outcome = data.get("next_question"), data.get("outcome")
            for target in (nxt, outcome):
                if target is not None and target.flowchart_id != flowchart.pk:
                    raise ValidationError(
                        f"Choice “{data['label']}” leads to “{target}”, which "
                        f"belongs to another chart."
                    )
            edges.append(
                Edge(
                    data["key"],
                    data["label"],
                    qref(nxt.key) if nxt else oref(outcome.key) if outcome else None,
                )
            )
        old_key = Question.objects.filter(pk=question.pk).values_list("key", flat=True).first()
        graph = flowchart_graph(flowchart).with_node(
            "q", old_key, question.key, question.text, edges
        )
        _refuse_if_broken(flowchart, graph)


class ChoiceInline(admin.TabularInline):
    model = Choice
    fk_name = "question"
    formset = ChoiceFormSet
    extra = 1
    fields = ["order", "key", "label", "next_question", "outcome", "sets"]

    def formfield_for_foreignkey(
        self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField | None:
        object_id = (
            request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
        )
        chart = (
            Question.objects.filter(pk=object_id).values_list("flowchart", flat=True).first()
            if object_id is not None  # the add page has no question yet
            else None
        )
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if (
            chart
            and db_field.name in ("next_question", "outcome")
            and field is not None
            and field.queryset is not None
        ):
            field.queryset = field.queryset.filter(flowchart_id=chart)
        return field


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["text", "key", "flowchart", "recommender_handover"]
    list_filter = ["flowchart"]
    search_fields = ["text", "key"]
    inlines = [ChoiceInline]

    def get_readonly_fields(self, request, obj=None):
        return ["flowchart"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        # Removing a node from the live chart would strand the choices that lead to it.
        if obj is not None and obj.flowchart.status == Flowchart.Status.PUBLISHED:
            return False
        return super().has_delete_permission(request, obj)


class OutcomeForm(forms.ModelForm):
    class Meta:
        model = Outcome
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns
        flowchart = data.get("flowchart") or getattr(self.instance, "flowchart", None)
        if flowchart and data.get("key") and not self.errors:
            old_key = (
                Outcome.objects.filter(pk=self.instance.pk).values_list("key", flat=True).first()
            )
            graph = flowchart_graph(flowchart).with_node(
                "o", old_key, data["key"], data.get("title", "")
            )
            _refuse_if_broken(flowchart, graph)
        return data


@admin.register(Outcome)
class OutcomeAdmin(admin.ModelAdmin):
    form = OutcomeForm
    list_display = ["title", "key", "facility", "node_type", "track", "flowchart"]
    list_filter = ["flowchart", "track", "facility"]
    search_fields = ["title", "key"]

    def get_readonly_fields(self, request, obj=None):
        return ["flowchart"] if obj else []


class FlowchartForm(forms.ModelForm):
    class Meta:
        model = Flowchart
        fields = ["name", "start_question"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        start = cast(forms.ModelChoiceField, self.fields["start_question"])  # a foreign key
        start.queryset = Question.objects.filter(flowchart_id=self.instance.pk or 0)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns
        if self.instance.pk:
            graph = flowchart_graph(self.instance)
            start = data.get("start_question")
            graph.start = start.key if start else None
            _refuse_if_broken(self.instance, graph)
        return data


@admin.register(Flowchart)
class FlowchartAdmin(admin.ModelAdmin):
    form = FlowchartForm
    list_display = ["name", "version", "status", "published_at", "links"]
    list_filter = ["status"]
    readonly_fields = ["version", "status", "published_at", "problems_found", "links"]
    actions = ["publish", "copy_as_draft"]

    def save_model(self, request, obj, form, change) -> None:
        if not change:  # a new draft: next version number of its name
            obj.version = (
                Flowchart.objects.filter(name=obj.name).aggregate(v=Max("version"))["v"] or 0
            ) + 1
        super().save_model(request, obj, form, change)

    @admin.display(description="Problems")
    def problems_found(self, obj: Flowchart) -> str:
        found = problems(flowchart_graph(obj)) if obj.pk else []
        if not found:
            return "None: the chart can be published."
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((p,) for p in found))
        )

    @admin.display(description="See")
    def links(self, obj: Flowchart) -> str:
        if not obj.pk:
            return "-"
        return format_html(
            '<a href="{}?version={}">walk it</a> · <a href="{}">analytics</a>',
            reverse("onboarding"),
            obj.pk,
            reverse("onboarding-stats-chart", args=[obj.pk]),
        )

    @admin.action(description="Publish the selected draft")
    def publish(self, request, queryset) -> None:
        for chart in queryset:
            try:
                services.flowchart_publish(flowchart=chart)
            except Invalid as error:
                self.message_user(
                    request,
                    f"{chart}: not published: {' '.join(error.messages_list())}",
                    messages.ERROR,
                )
            else:
                self.message_user(request, f"{chart} is now the published chart.", messages.SUCCESS)

    @admin.action(description="Copy as a new draft version")
    def copy_as_draft(self, request, queryset) -> None:
        for chart in queryset:
            draft = services.flowchart_copy(flowchart=chart)
            self.message_user(request, f"Created {draft}.", messages.SUCCESS)
