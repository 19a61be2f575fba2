"""The System-Tooling Matrix, safe Markdown walkthroughs, and search."""

from __future__ import annotations

import re

from portal.knowledge import selectors, services
from portal.knowledge.models import Support


def cell(page: str, tool: str) -> list[str]:
    row = re.search(rf">{tool}</a></th>(.*?)</tr>", page, re.S).group(1)
    return re.findall(r'class="kb-cell kb-(\w+)"', row)


def test_the_seeded_matrix_has_the_seeds_tools_and_systems(knowledge, client):
    matrix = selectors.matrix()
    assert [s.name for s in matrix.systems] == ["JADE2", "Baskerville", "COSMA8", "Azure"]
    assert [s.facility.slug for s in matrix.systems] == ["jade2", "baskerville", "cosma8", "azure"]
    assert len(matrix.rows) == 10
    page = client.get("/knowledge/").content.decode()
    assert cell(page, "PyTorch") == ["yes", "yes", "yes", "unknown"]
    assert cell(page, "AzureML") == ["no", "no", "no", "yes"]


def test_an_edited_cell_shows_on_the_page_and_survives_reseeding(knowledge, client):
    services.matrix_set(tool="Accelerate", system="Azure", status="yes")
    from portal.knowledge import demo

    demo.seed()
    assert Support.objects.get(tool__name="Accelerate", system__name="Azure").status == "yes"
    assert cell(client.get("/knowledge/").content.decode(), "Accelerate")[-1] == "yes"


def test_markdown_is_rendered_and_scripts_never_reach_the_page(knowledge, client):
    services.walkthrough_save(
        slug="evil",
        title="Evil page",
        body_markdown=(
            "## Hello\n\n<script>alert('x')</script>\n\n<img src=x onerror=alert(1)>\n\n"
            '[click](javascript:alert(2)) and <a href="https://ok.example" onclick="alert(3)">ok'
            '</a>\n\n<iframe src="https://evil.example"></iframe><style>body{}</style>\n\n'
            "```python\nprint('<b>code</b>')\n```"
        ),
    )
    response = client.get("/knowledge/evil/")
    article = re.search(
        r'<article class="card kb-article">(.*?)</article>', response.content.decode(), re.S
    ).group(1)
    assert '<h2 id="hello">Hello</h2>' in article
    assert "&lt;b&gt;code&lt;/b&gt;" in article
    for bad in ("<script", "onerror", "javascript:", "onclick", "<iframe", "<style"):
        assert bad not in article.lower()
    assert 'href="https://ok.example"' in article


def test_admin_saves_render_and_sanitise_too(knowledge, client, admin):
    client.force_login(admin)
    response = client.post(
        "/admin/knowledge/walkthrough/add/",
        {
            "title": "Admin page",
            "slug": "admin-page",
            "summary": "",
            "is_published": "on",
            "body_markdown": "Hi <script>steal()</script> **bold**",
        },
    )
    assert response.status_code == 302
    page = client.get("/knowledge/admin-page/").content.decode()
    article = page.split('kb-article">')[1].split("</article>")[0]
    assert "<strong>bold</strong>" in article
    assert "<script" not in article


def test_search_needs_every_word_and_ranks_title_matches_first(knowledge, client):
    services.walkthrough_save(
        slug="mentions",
        title="Storage notes",
        body_markdown="Keep data near the GPUs; Lightning on XPU is covered elsewhere.",
    )
    titles = [p.title for p in selectors.walkthrough_search("xpu")]
    assert titles[0] == "Using XPUs on Dawn with Lightning"
    assert "Storage notes" in titles
    assert [p.title for p in selectors.walkthrough_search("xpu storage")] == ["Storage notes"]
    assert selectors.walkthrough_search("nonexistentword") == []
    page = client.get("/knowledge/", {"q": "notebooks"}).content.decode()
    assert "Baskerville quick start" in page


def test_the_sweeps_article_is_seeded_about_no_system_and_found_by_search(knowledge, client):
    slug = "sweeps-grid-random-tpe-early-stopping"
    index = client.get("/knowledge/").content.decode()
    assert f'href="/knowledge/{slug}/">Sweeps: grid, random, TPE, early stopping</a>' in index
    page = client.get(f"/knowledge/{slug}/").content.decode()
    article = page.split('kb-article">')[1].split("</article>")[0]
    assert "<table>" in article and "<strong>ASHA</strong>" in article
    assert "--search tpe --trials 40" in article
    assert [p.slug for p in selectors.walkthrough_search("tpe")][0] == slug
    assert selectors.published_walkthroughs().get(slug=slug).facility is None
