"""The Turing's allocation flowchart (seed 004), as the portal's first published chart.

Changes from the seed, on purpose (see docs/onboarding.md):
- "Are V100s sufficient? Yes" leads to JADE2 (V100) and "No" to Baskerville (A100 80 GB); the
  seed's drawing has them the other way round, which sends people who need more than a V100 to
  the V100 machine.
- A data-sensitivity question on the HPC branch: Baskerville and JADE2 accept public and
  internal data only, so personal data goes to Stanage and special-category data to the Azure
  subscription's Trusted Research Environment (the facilities that accept those tiers).
- "Azure" is the demo's `azure` facility; the brief request mentions the `aws-spot` cluster.
"""

from __future__ import annotations

from django.db import transaction

from allocations.models import Facility, NodeType

from . import services
from .models import Flowchart
from .services import ChoiceSpec

CHART_NAME = "Which compute service?"

OUTCOMES = [
    # key, title, facility, node type, track, gpu hours, explanation
    (
        "azure-trial",
        "Get an Azure trial credit",
        "azure",
        "NC24ads-A100",
        "trial_credit",
        100,
        "Not sure the cloud is for you? A trial credit (the Turing offers £300) lets you try a "
        "subscription with minimal justification before committing. It is capped and can be "
        "converted into a full request later.",
    ),
    (
        "azure-brief",
        "Submit a brief Azure request",
        "azure",
        "NC24ads-A100",
        "brief",
        None,
        "Your project or programme pays, so a brief request is enough: say what you will run and "
        "the budget line. For batch training that can resume after interruptions, the AWS spot GPU "
        "cluster (aws-spot) costs about a third of on-demand prices.",
    ),
    (
        "azure-full",
        "Submit a full Azure request",
        "azure",
        "NC24ads-A100",
        "full",
        None,
        "Core funds pay for it, so the request goes to reviewers with a full justification: what "
        "the subscription is for, why it needs the cloud (root access, a public web service, "
        "long-term storage) and for how long.",
    ),
    (
        "azure-tre",
        "Use a Trusted Research Environment on Azure",
        "azure",
        "NC24ads-A100",
        "full",
        None,
        "Special-category data (health, genetic, biometric) is not accepted on Baskerville or "
        "JADE2. The Azure subscription accepts every tier inside a Trusted Research Environment; "
        "a full request lets the reviewers check the data-protection arrangements.",
    ),
    (
        "stanage-personal",
        "Request time on Stanage",
        "stanage",
        "S-H100-80",
        "full",
        None,
        "Personal data is not accepted on Baskerville or JADE2. Stanage accepts personal data and "
        "offers NVIDIA H100 80 GB GPUs; its requests go to reviewers, who check the data "
        "arrangements.",
    ),
    (
        "baskerville-notebooks",
        "Request time on Baskerville",
        "baskerville",
        "B-A100-40",
        "trial",
        None,
        "Baskerville runs Jupyter notebooks on its A100 nodes through its portal, so it suits "
        "interactive work. Start with a trial (approved at once, within the cap) and convert it to "
        "a full allocation when you know what you need.",
    ),
    (
        "jade2-v100",
        "Request time on JADE2",
        "jade2",
        "J-V100-32",
        "trial",
        None,
        "V100s are enough for your work, and JADE2's 32 GB V100 nodes (8 per node) are the least "
        "contended and cheapest GPU-hours here: leave the A100s to work that needs them.",
    ),
    (
        "baskerville-a100",
        "Request time on Baskerville (A100 80 GB)",
        "baskerville",
        "B-A100-80",
        "trial",
        None,
        "V100s are not enough: Baskerville's A100s are several times faster with bf16 mixed "
        "precision and its 80 GB nodes fit larger models and batches.",
    ),
]

_ChoiceRow = tuple[str, str, str, dict[str, str]]
QUESTIONS: list[tuple[str, str, str, bool, list[_ChoiceRow]]] = [
    # key, text, help text, handover, choices (key, label, leads to, sets)
    (
        "cloud",
        "Do I need cloud?",
        "You can use cloud computing (an Azure subscription) and/or HPC (Baskerville, JADE2). The "
        "cloud suits work that needs full control of the resource: hosting a public web service, "
        "installing software that needs root, or keeping large data for a long time. If you are "
        "not sure, a small trial credit lets you find out.",
        False,
        [
            ("cloud-yes", "Yes", "q:payer", {}),
            ("cloud-maybe", "Maybe", "o:azure-trial", {}),
            ("cloud-no", "No", "q:sensitivity", {}),
        ],
    ),
    (
        "payer",
        "Who pays for it?",
        "Cloud costs money per hour. Requests paid from a project's or programme's own budget need "
        "only a brief description; requests on core funds are reviewed in full.",
        False,
        [
            ("payer-project", "The project or programme", "o:azure-brief", {}),
            ("payer-core", "Core funds", "o:azure-full", {}),
        ],
    ),
    (
        "sensitivity",
        "How sensitive is the data?",
        "The HPC systems accept public and internal data only. Personal data and special-category "
        "data (health, genetic, biometric) need a facility that accepts them.",
        False,
        [
            ("data-public", "Public, non-sensitive", "q:notebooks", {"data_sensitivity": "public"}),
            ("data-internal", "Internal", "q:notebooks", {"data_sensitivity": "internal"}),
            (
                "data-personal",
                "Personal data",
                "o:stanage-personal",
                {"data_sensitivity": "personal"},
            ),
            (
                "data-special",
                "Special category (health, genetic, ...)",
                "o:azure-tre",
                {"data_sensitivity": "special"},
            ),
        ],
    ),
    (
        "notebooks",
        "Am I using notebooks?",
        "Jupyter notebooks for interactive work, as opposed to batch jobs submitted to a queue.",
        False,
        [
            ("notebooks-yes", "Yes", "o:baskerville-notebooks", {"needs": "notebooks"}),
            ("notebooks-no", "No, batch jobs", "q:v100", {}),
        ],
    ),
    (
        "v100",
        "Are V100s sufficient?",
        "NVIDIA V100 (32 GB) GPUs train small and medium models well. Large models, bf16 mixed "
        "precision or more than 32 GB of GPU memory need A100s. Not sure? The benchmark "
        "recommender compares systems for your workload.",
        True,
        [
            ("v100-yes", "Yes", "o:jade2-v100", {}),
            ("v100-no", "No, I need more", "o:baskerville-a100", {}),
        ],
    ),
]


@transaction.atomic
def seed() -> Flowchart | None:
    """Load and publish the chart unless a chart of that name exists (then change nothing)."""
    if Flowchart.objects.filter(name=CHART_NAME).exists():
        return None
    chart = services.flowchart_create(name=CHART_NAME)
    for key, title, slug, node, track, hours, text in OUTCOMES:
        facility = Facility.objects.get(slug=slug)
        services.outcome_save(
            flowchart=chart,
            key=key,
            title=title,
            facility=facility,
            node_type=NodeType.objects.get(facility=facility, name=node),
            track=track,
            gpu_hours=hours,
            explanation=text,
        )
    # Leaves first, so that every choice finds the question it leads to.
    for order, (key, text, help_text, handover, choices) in reversed(list(enumerate(QUESTIONS))):
        services.question_save(
            flowchart=chart,
            key=key,
            text=text,
            help_text=help_text,
            order=order,
            recommender_handover=handover,
            choices=[ChoiceSpec(*c) for c in choices],
        )
    services.flowchart_set_start(flowchart=chart, question=chart.questions.get(key="cloud"))
    return services.flowchart_publish(flowchart=chart)
