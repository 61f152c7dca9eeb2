"""Issue 37, point 9: an entity's page says, per field, what agents are told now, as the
resolver answers through the contract (the same answer the API gives)."""

from __future__ import annotations

import re

from agent_interface.answers import resolved
from tests.dashboard.support import Demo


def _told(body: str) -> dict[str, str]:
    table = body[
        body.index('<table class="told-now">') : body.index("</table>", body.index("told-now"))
    ]
    return dict(
        re.findall(r'<code>(\w+)</code></th>\s*<td><code class="val">([^<]*)</code>', table)
    )


def test_sarahs_page_says_pune_as_the_contract_answers(demo: Demo) -> None:
    sarah = demo.item("sarah_pune").subject_id
    rita = demo.client("rita")

    body = rita.get(f"/entities/{sarah}/").content.decode()
    api = demo.principal("rita")

    assert "What agents are told now" in body
    assert _told(body)["home_city"] == "Pune"
    assert "Sarah moved to Pune in March." in body
    assert "Mumbai" not in body[body.index("told-now") :]
    answer = resolved(api, {"subject": sarah})
    assert {f["field"]: f["value"] for f in answer["facts"]} == _told(body)
    for abstention in answer["abstentions"]:
        assert f"<code>{abstention['field']}</code>" in body


def test_omar_reads_what_agents_are_told_without_links_he_could_not_open(demo: Demo) -> None:
    sarah = demo.item("sarah_pune").subject_id

    body = demo.client("omar").get(f"/entities/{sarah}/").content.decode()

    told = body[body.index('<table class="told-now">') :]
    assert "“Sarah moved to Pune in March.”" in told
    assert f'href="/memories/{demo.items["sarah_pune"]}/"' not in told
