"""The labelled search-quality set (issues 44 and 45): a tenant's world as plain data and
the questions about it, each with the entity or fact that answers it (or none).

Pure Python, no Django: ``bench.search_quality`` builds the world in Memgov through the
agent_interface functions, ``bench.mem0_side_by_side`` stores the same statements in Mem0 from a
virtualenv of its own. Every entity and fact has a key (``ent:…``, ``mem:…``); generated
ones start with ``~`` and no question asks for them.

The world: 41 named entities (accented, Greek, Chinese and Polish names, companies,
orders, an invoice, a return, a ticket; look-alikes such as Dana Whitfield, Müller &
Söhne beside Jürgen Müller, Papadopoulos Shipping beside Γιώργος Παπαδόπουλος), about 80
hand-written facts about them (33 naming two or three entities through value references
``{"entity": …}``) and routine generated facts of the same entities (phones, e-mail,
addresses, terms, statuses), among ``filler`` generated look-alike customers with the same
fields.

The questions: the 64 of issue 44 unchanged, then those of issue 45 — written as users
ask them, before the engine was run on them, and never changed to suit it. ``no_answer``
questions have no answer in the tenant: an engine should return nothing for them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

NO_ANSWER = "no_answer"


@dataclass(frozen=True)
class Labelled:
    category: str
    q: str
    wanted: str | None  # "ent:…" an entity, "mem:…" a fact; None for no_answer


@dataclass(frozen=True)
class Ref:
    """A value's reference to another entity of the set, by key (without ``ent:``)."""

    key: str


@dataclass(frozen=True)
class Entity:
    key: str  # without "ent:"
    name: str
    kind: str
    ref: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fact:
    key: str  # without "mem:"
    subject: str  # an entity key
    field: str
    value: Any  # JSON, with Ref for entity references
    statement: str
    said: str


@dataclass
class World:
    entities: list[Entity] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def names(self) -> dict[str, str]:
        return {e.key: e.name for e in self.entities}

    def refs(self, value: Any) -> Iterator[str]:
        """The entity keys a value refers to."""
        if isinstance(value, Ref):
            yield value.key
        elif isinstance(value, dict):
            for v in value.values():
                yield from self.refs(v)
        elif isinstance(value, list):
            for v in value:
                yield from self.refs(v)

    def fact_text(self, fact: Fact) -> str:
        """What Memgov knows of a fact, in words: the subject's name, the field in words,
        the value's text (references by name) and the statement."""
        names = self.names()
        return (
            f"{names[fact.subject]}: {fact.field.replace('_', ' ')}: "
            f"{value_text(fact.value, names)}. {fact.statement}"
        )

    def entity_text(self, entity: Entity) -> str:
        parts = [entity.name, *entity.aliases]
        if entity.ref:
            parts.append(entity.ref)
        return f"{' / '.join(parts)} ({entity.kind})"


def value_text(value: Any, names: dict[str, str]) -> str:
    if isinstance(value, Ref):
        return names[value.key]
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {value_text(v, names)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(value_text(v, names) for v in value)
    return str(value)


# The 64 queries of issue 44, written before tuning, as users ask. Not to be changed.
ISSUE_44: tuple[Labelled, ...] = (
    # First names
    Labelled("first_name", "Jürgen", "ent:jurgen"),
    Labelled("first_name", "Priya", "ent:priya"),
    Labelled("first_name", "Tomás", "ent:tomas"),
    Labelled("first_name", "Marcus", "ent:marcus"),
    Labelled("first_name", "Zoë", "ent:zoe"),
    Labelled("first_name", "Björn", "ent:bjorn"),
    # Full names
    Labelled("full_name", "Dana Kim", "ent:dana"),
    Labelled("full_name", "Sarah Chen", "ent:sarah"),
    Labelled("full_name", "Li Wei", "ent:liwei"),
    Labelled("full_name", "Northwind Traders", "ent:northwind"),
    Labelled("full_name", "Marcus O'Brien", "ent:marcus"),
    Labelled("full_name", "Priya Raman", "ent:priya"),
    Labelled("full_name", "Hooli Retail", "ent:hooli"),
    Labelled("full_name", "李伟", "ent:liwei"),
    # Misspellings
    Labelled("misspelling", "nortwind", "ent:northwind"),
    Labelled("misspelling", "norhtwind traders", "ent:northwind"),
    Labelled("misspelling", "Sara Chen", "ent:sarah"),
    Labelled("misspelling", "Priya Ramen", "ent:priya"),
    Labelled("misspelling", "Marcus OBrien", "ent:marcus"),
    Labelled("misspelling", "Umbrela Logistics", "ent:umbrella"),
    # Missing accents
    Labelled("no_accents", "Jurgen Muller", "ent:jurgen"),
    Labelled("no_accents", "Zoe Saldana", "ent:zoe"),
    Labelled("no_accents", "Tomas Herrera", "ent:tomas"),
    Labelled("no_accents", "Bjorn Akesson", "ent:bjorn"),
    Labelled("no_accents", "Hauptstrasse", "mem:jurgen_address"),
    Labelled("no_accents", "Koln delivery", "mem:jurgen_address"),
    # External references and their parts
    Labelled("external_ref", "ORD-1001", "ent:ord1001"),
    Labelled("external_ref", "SO-77-A/3", "ent:so77"),
    Labelled("external_ref", "CRM-C-1001", "ent:hooli"),
    Labelled("external_ref", "CRM-0042", "ent:acme"),
    Labelled("external_ref", "ord-1002", "ent:ord1002"),
    Labelled("external_ref", "ORD1001", "ent:ord1001"),
    Labelled("ref_part", "1001", "ent:ord1001"),
    Labelled("ref_part", "SO-77", "ent:so77"),
    Labelled("ref_part", "2040", "ent:ord2040"),
    Labelled("ref_part", "0042", "ent:acme"),
    # Phrases from statements
    Labelled("phrase", '"net 30"', "mem:northwind_terms"),
    Labelled("phrase", "leads procurement", "mem:sarah_employer"),
    Labelled("phrase", "loading dock closes at 4pm", "mem:umbrella_dock"),
    Labelled("phrase", "prefers email over phone", "mem:priya_contact"),
    Labelled("phrase", "vegetarian", "mem:marcus_diet"),
    Labelled("phrase", "invoices in euros", "mem:globex_currency"),
    Labelled("phrase", "signature on delivery", "mem:tomas_signature"),
    Labelled("phrase", "approval limit 5000", "mem:initech_limit"),
    # Natural questions
    Labelled("question", "where does Dana Kim get her parcels delivered", "mem:dana_address"),
    Labelled("question", "who works at Northwind", "mem:sarah_employer"),
    Labelled("question", "what are Northwind's payment terms", "mem:northwind_terms"),
    Labelled("question", "when does the Umbrella loading dock close", "mem:umbrella_dock"),
    Labelled("question", "how does Priya like to be contacted", "mem:priya_contact"),
    Labelled("question", "what currency does Globex pay in", "mem:globex_currency"),
    Labelled("question", "does Marcus eat meat", "mem:marcus_diet"),
    Labelled("question", "which order is going to 4 Dock Road", "mem:dana_order"),
    Labelled("question", "what is Initech's approval limit", "mem:initech_limit"),
    Labelled("question", "who is the account manager for Acme", "mem:acme_manager"),
    # Mixed entity + field words
    Labelled("mixed", "Dana delivery address", "mem:dana_address"),
    Labelled("mixed", "Dana active order", "mem:dana_order"),
    Labelled("mixed", "Northwind payment terms", "mem:northwind_terms"),
    Labelled("mixed", "Priya phone", "mem:priya_phone"),
    Labelled("mixed", "Jurgen address", "mem:jurgen_address"),
    Labelled("mixed", "Li Wei language", "mem:liwei_language"),
    Labelled("mixed", "Tomas signature", "mem:tomas_signature"),
    Labelled("mixed", "Acme account manager", "mem:acme_manager"),
    Labelled("mixed", "ORD-1001 delivery", "mem:dana_order"),
    Labelled("mixed", "Globex currency", "mem:globex_currency"),
)

# Issue 45's questions, written as users ask them before any engine was run on them;
# never edited afterwards to suit one.
ISSUE_45: tuple[Labelled, ...] = (
    Labelled("first_name", "Łukasz", "ent:lukasz"),
    Labelled("first_name", "Gosia", "ent:malgorzata"),
    Labelled("full_name", "Wang Wei", "ent:wangwei"),
    Labelled("full_name", "Müller & Söhne", "ent:muller_sohne"),
    Labelled("full_name", "Blue Harbor Freight", "ent:blueharbor"),
    Labelled("misspelling", "Agneska Wójcik", "ent:agnieszka"),
    Labelled("misspelling", "Stark Medicle", "ent:stark"),
    Labelled("misspelling", "Blue Harbour Freight", "ent:blueharbor"),
    Labelled("misspelling", "Papadopolous Shipping", "ent:papadopoulos_ship"),
    Labelled("misspelling", "Globax", "ent:globex"),
    Labelled("misspelling", "Jose Nunes", "ent:jose"),
    Labelled("no_accents", "Lukasz Wisniewski", "ent:lukasz"),
    Labelled("no_accents", "Malgorzata Zolkowska", "ent:malgorzata"),
    Labelled("no_accents", "Francois Lefevre", "ent:francois"),
    Labelled("external_ref", "INV-88120", "ent:inv88120"),
    Labelled("external_ref", "RMA-5531", "ent:rma5531"),
    Labelled("external_ref", "so-78-b/1", "ent:so78"),
    Labelled("ref_part", "88120", "ent:inv88120"),
    Labelled("ref_part", "4471", "ent:tck4471"),
    Labelled("phrase", "no nuts in gift baskets", "mem:chenjing_allergy"),
    Labelled("phrase", "ring and wait at the gate", "mem:zoe_dog"),
    Labelled("phrase", "purchase order number", "mem:initech_po"),
    Labelled("question", "what is the VAT number of Globex", "mem:globex_vat"),
    Labelled("question", "how does Zhang Min pay", "mem:zhangmin_payment"),
    Labelled("question", "what is Acme's credit limit", "mem:acme_credit"),
    Labelled("mixed", "Lukasz invoice", "mem:lukasz_invoice"),
    Labelled("mixed", "Blue Harbor pickup", "mem:blueharbor_cutoff"),
    Labelled("mixed", "Eleni call hours", "mem:eleni_hours"),
    # The wording differs from the statement.
    Labelled("paraphrase", "where do Dana Kim's parcels go", "mem:dana_address"),
    Labelled("paraphrase", "is there anything Chen Jing can't eat", "mem:chenjing_allergy"),
    Labelled("paraphrase", "when can I phone Eleni", "mem:eleni_hours"),
    Labelled("paraphrase", "is Nikos one of our best customers", "mem:nikos_tier"),
    Labelled("paraphrase", "what tax id goes on Łukasz's bills", "mem:lukasz_invoice"),
    Labelled("paraphrase", "how should we warn Małgorzata before a drop-off", "mem:malgorzata_sms"),
    Labelled("paraphrase", "what language should letters to François be in", "mem:francois_lang"),
    Labelled("paraphrase", "does José want his money back for returns", "mem:jose_returns"),
    Labelled("paraphrase", "how long do Müller & Söhne take to pay", "mem:muller_terms"),
    Labelled("paraphrase", "latest time to book a Blue Harbor collection", "mem:blueharbor_cutoff"),
    Labelled("paraphrase", "what paperwork must go with Stark Medical deliveries", "mem:stark_iso"),
    Labelled("paraphrase", "what money is Kowalski Meble billed in", "mem:kowalski_currency"),
    Labelled(
        "paraphrase", "how much is the Papadopoulos cargo cover", "mem:papadopoulos_insurance"
    ),
    Labelled("paraphrase", "anything to be careful with when packing for Björn", "mem:bjorn_glass"),
    Labelled("paraphrase", "is there an animal at Zoë's place", "mem:zoe_dog"),
    Labelled("paraphrase", "is Sarah Chen around at Christmas", "mem:sarah_holiday"),
    Labelled("paraphrase", "how big is Hooli's chain", "mem:hooli_stores"),
    Labelled("paraphrase", "how much can Acme owe us", "mem:acme_credit"),
    Labelled("paraphrase", "can Initech order without a PO", "mem:initech_po"),
    Labelled("paraphrase", "can we send Dana Kim promotions", "mem:dana_newsletter"),
    Labelled("paraphrase", "can Umbrella carry lithium batteries", "mem:umbrella_hazmat"),
    Labelled("paraphrase", "what's Tomás's mother tongue", "mem:tomas_language"),
    Labelled("paraphrase", "when was Marcus born", "mem:marcus_birthday"),
    # Another script or another romanisation than the one stored.
    Labelled("transliteration", "王伟", "ent:wangwei"),
    Labelled("transliteration", "王伟 delivery address", "mem:wangwei_address"),
    Labelled("transliteration", "张敏", "ent:zhangmin"),
    Labelled("transliteration", "Chen Jing", "ent:chenjing"),
    Labelled("transliteration", "Giorgos Papadopoulos", "ent:giorgos"),
    Labelled("transliteration", "Yiorgos Papadopoulos", "ent:giorgos"),
    Labelled("transliteration", "Νίκος Κατσαρός", "ent:nikos"),
    Labelled("transliteration", "Ελένη Γεωργίου", "ent:eleni"),
    # A fact naming two entities, asked by both.
    Labelled("multi_entity", "Jürgen's role at Müller & Söhne", "mem:jurgen_owner"),
    Labelled("multi_entity", "does Giorgos ship with Papadopoulos Shipping", "mem:giorgos_carrier"),
    Labelled("multi_entity", "what does Agnieszka do at Kowalski Meble", "mem:agnieszka_employer"),
    Labelled("multi_entity", "Sam Okafor Blue Harbor", "mem:sam_employer"),
    Labelled("multi_entity", "Globex invoice INV-88120", "mem:inv88120_billing"),
    Labelled("multi_entity", "RMA-5531 for ORD-2040", "mem:rma5531_order"),
    Labelled("multi_entity", "Marcus complaint about ORD-1002", "mem:tck4471_issue"),
    Labelled("multi_entity", "Li Wei and Wang Wei", "mem:liwei_wangwei"),
    Labelled("multi_entity", "is Northwind part of Globex", "mem:northwind_parent"),
    Labelled("multi_entity", "Zhang Min ordering for Wang Wei", "mem:zhangmin_buyer"),
    Labelled("multi_entity", "Stark Medical warehouse Umbrella", "mem:stark_warehouse"),
    Labelled("multi_entity", "Björn at Hooli", "mem:bjorn_hooli"),
    # Nothing in the tenant answers these: things not stored, entities not present.
    Labelled(NO_ANSWER, "Hannah Schreiber", None),
    Labelled(NO_ANSWER, "ORD-9999", None),
    Labelled(NO_ANSWER, "what is Dana Kim's favourite colour", None),
    Labelled(NO_ANSWER, "who is the CEO of Initech", None),
    Labelled(NO_ANSWER, "does Marcus O'Brien have children", None),
    Labelled(NO_ANSWER, "Wayne Enterprises payment terms", None),
    Labelled(NO_ANSWER, "where does Olivia Park want deliveries", None),
    Labelled(NO_ANSWER, "invoice INV-55555", None),
    Labelled(NO_ANSWER, "what is Northwind's stock ticker", None),
    Labelled(NO_ANSWER, "Kenji Yamamoto", None),
    Labelled(NO_ANSWER, "王芳", None),
    Labelled(NO_ANSWER, "Σωκράτης Νικολάου", None),
)

QUERIES: tuple[Labelled, ...] = ISSUE_44 + ISSUE_45

E = Entity
NAMED: tuple[Entity, ...] = (
    # Issue 44's, unchanged (their names are what its queries ask for).
    E("dana", "Dana Kim", "customer"),
    E("dana_whitfield", "Dana Whitfield", "customer"),
    E("sarah", "Sarah Chen", "person", aliases=("Sal",)),
    E("jurgen", "Jürgen Müller", "customer"),
    E("zoe", "Zoë Saldaña", "customer"),
    E("liwei", "Li Wei", "customer", aliases=("李伟",)),
    E("marcus", "Marcus O'Brien", "customer"),
    E("priya", "Priya Raman", "customer"),
    E("tomas", "Tomás Herrera", "customer"),
    E("bjorn", "Björn Åkesson", "customer"),
    E("northwind", "Northwind Traders", "company", ref="CRM-0077"),
    E("acme", "Acme Industries", "company", ref="CRM-0042"),
    E("globex", "Globex Corporation", "company", ref="CRM-0108"),
    E("initech", "Initech", "company", ref="CRM-0311"),
    E("umbrella", "Umbrella Logistics", "company", ref="CRM-0520"),
    E("hooli", "Hooli Retail", "customer", ref="CRM-C-1001"),
    E("ord1001", "Order ORD-1001", "order", ref="ORD-1001"),
    E("ord1002", "Order ORD-1002", "order", ref="ORD-1002"),
    E("ord2040", "Order ORD-2040", "order", ref="ORD-2040"),
    E("so77", "Sales order SO-77-A/3", "order", ref="SO-77-A/3"),
    # Issue 45's.
    E("wangwei", "Wang Wei", "customer", aliases=("王伟",)),
    E("zhangmin", "Zhang Min", "customer"),
    E("chenjing", "陈静", "customer"),
    E("giorgos", "Γιώργος Παπαδόπουλος", "customer"),
    E("eleni", "Eleni Georgiou", "customer", aliases=("Ελένη Γεωργίου",)),
    E("nikos", "Nikos Katsaros", "customer"),
    E("lukasz", "Łukasz Wiśniewski", "customer"),
    E("malgorzata", "Małgorzata Żółkowska", "customer", aliases=("Gosia",)),
    E("agnieszka", "Agnieszka Wójcik", "person"),
    E("francois", "François Lefèvre", "customer"),
    E("jose", "José Núñez", "customer"),
    E("sam", "Sam Okafor", "person"),
    E("muller_sohne", "Müller & Söhne GmbH", "company", ref="CRM-0640"),
    E("blueharbor", "Blue Harbor Freight", "company", ref="CRM-0733"),
    E("stark", "Stark Medical", "company", ref="CRM-0815"),
    E("kowalski_meble", "Kowalski Meble", "company", ref="CRM-0902"),
    E("papadopoulos_ship", "Papadopoulos Shipping", "company", ref="CRM-0977"),
    E("inv88120", "Invoice INV-88120", "invoice", ref="INV-88120"),
    E("rma5531", "Return RMA-5531", "return", ref="RMA-5531"),
    E("so78", "Sales order SO-78-B/1", "order", ref="SO-78-B/1"),
    E("tck4471", "Ticket TCK-4471", "ticket", ref="TCK-4471"),
)

F = Fact
FACTS: tuple[Fact, ...] = (
    # Issue 44's, unchanged.
    F(
        "dana_address",
        "dana",
        "delivery_address",
        "12 Elm Street, Springfield",
        "Normally wants deliveries at home, 12 Elm Street.",
        "Dana: please deliver to my home at 12 Elm Street.",
    ),
    F(
        "dana_order",
        "dana",
        "active_order",
        {"order": Ref("ord1001"), "ships_to": "4 Dock Road"},
        "Active order ships to her office at 4 Dock Road this week.",
        "Order ORD-1001 confirmed, shipping to 4 Dock Road.",
    ),
    F(
        "dana_phone",
        "dana",
        "phone",
        "+1 555 0100",
        "Reachable on her mobile.",
        "Dana's mobile is 555 0100.",
    ),
    F(
        "sarah_employer",
        "sarah",
        "employer",
        {"organisation": Ref("northwind"), "role": "procurement lead"},
        "Sarah leads procurement at her employer.",
        "Sarah said she leads procurement at Northwind now.",
    ),
    F(
        "jurgen_address",
        "jurgen",
        "delivery_address",
        "Hauptstraße 5, 50667 Köln",
        "Jürgen wants deliveries at Hauptstraße 5 in Köln.",
        "Jürgen: send it to Hauptstraße 5, Köln.",
    ),
    F(
        "liwei_language",
        "liwei",
        "preferred_language",
        "zh",
        "Prefers to be written to in Mandarin.",
        "Li Wei asked for Mandarin in all letters.",
    ),
    F(
        "marcus_diet",
        "marcus",
        "dietary_requirement",
        "vegetarian",
        "Marcus is vegetarian: no meat at client dinners.",
        "Marcus mentioned he is vegetarian.",
    ),
    F(
        "priya_contact",
        "priya",
        "contact_channel",
        "email",
        "Priya prefers email over phone for anything non-urgent.",
        "Priya: email me rather than calling.",
    ),
    F("priya_phone", "priya", "phone", "+44 20 7946 0018", "Office line.", "Priya's office line."),
    F(
        "tomas_signature",
        "tomas",
        "delivery_instructions",
        "signature required",
        "Requires a signature on delivery; never leave at the door.",
        "Tomás wants to sign for every parcel.",
    ),
    F(
        "northwind_terms",
        "northwind",
        "payment_terms",
        "net 30",
        "Northwind pays on net 30 terms.",
        "Contract renewal: payment terms net 30.",
    ),
    F(
        "umbrella_dock",
        "umbrella",
        "receiving_hours",
        "08:00-16:00",
        "The loading dock closes at 4pm; later trucks are turned away.",
        "Umbrella's warehouse: dock closes 16:00.",
    ),
    F(
        "globex_currency",
        "globex",
        "billing_currency",
        "EUR",
        "Globex invoices in euros and pays by SEPA transfer.",
        "Globex finance: please invoice in EUR.",
    ),
    F(
        "initech_limit",
        "initech",
        "approval_limit",
        {"amount": 5000, "currency": "USD"},
        "Orders above the approval limit of 5000 USD need the CFO.",
        "Initech: anything over 5000 USD goes to the CFO.",
    ),
    F(
        "acme_manager",
        "acme",
        "account_manager",
        {"person": Ref("sarah")},
        "Our account manager for this company is Sarah Chen.",
        "Sarah Chen manages the Acme account.",
    ),
    F(
        "tomas_phone",
        "tomas",
        "phone",
        "+34 600 000 111",
        "Mobile, Spanish number.",
        "Tomás' mobile.",
    ),
    # Issue 45's: one subject.
    F(
        "wangwei_address",
        "wangwei",
        "delivery_address",
        "88 Nanjing Road, Shanghai",
        "Deliveries go to the Shanghai office on Nanjing Road.",
        "Wang Wei: ship to our office, 88 Nanjing Road.",
    ),
    F(
        "zhangmin_payment",
        "zhangmin",
        "payment_method",
        "Alipay",
        "Pays by Alipay; no bank cards.",
        "Zhang Min only uses Alipay.",
    ),
    F(
        "chenjing_allergy",
        "chenjing",
        "allergy",
        "peanuts",
        "Severe peanut allergy: no nuts in gift baskets.",
        "Her assistant warned us about the peanut allergy.",
    ),
    F(
        "eleni_hours",
        "eleni",
        "call_hours",
        "09:00-12:00 EET",
        "Only reachable in the mornings, Athens time.",
        "Eleni: call me before noon.",
    ),
    F(
        "nikos_tier",
        "nikos",
        "customer_tier",
        "gold",
        "Gold tier: free express shipping on every order.",
        "Nikos was upgraded to gold.",
    ),
    F(
        "lukasz_invoice",
        "lukasz",
        "invoice_format",
        "PDF with NIP",
        "Invoices must show his NIP tax number.",
        "Łukasz: put my NIP on the invoice please.",
    ),
    F(
        "malgorzata_sms",
        "malgorzata",
        "delivery_notification",
        "sms",
        "Wants a text message before every delivery.",
        "Gosia asked for an SMS before the courier comes.",
    ),
    F(
        "francois_lang",
        "francois",
        "preferred_language",
        "fr",
        "Writes only in French.",
        "François answered in French again.",
    ),
    F(
        "jose_returns",
        "jose",
        "refund_preference",
        "store credit",
        "Takes store credit instead of refunds.",
        "José: just give me credit for next time.",
    ),
    F(
        "muller_terms",
        "muller_sohne",
        "payment_terms",
        "net 60",
        "Müller & Söhne pay 60 days after invoice.",
        "Their accounts office confirmed 60 days.",
    ),
    F(
        "blueharbor_cutoff",
        "blueharbor",
        "pickup_cutoff",
        "15:00",
        "Pickups must be booked before 3 in the afternoon.",
        "Blue Harbor dispatch: book by 15:00.",
    ),
    F(
        "stark_iso",
        "stark",
        "compliance",
        "ISO 13485",
        "All shipments need ISO 13485 certificates attached.",
        "Stark quality team: certificates with every shipment.",
    ),
    F(
        "kowalski_currency",
        "kowalski_meble",
        "billing_currency",
        "PLN",
        "Kowalski Meble is billed in złoty.",
        "Invoice them in PLN.",
    ),
    F(
        "papadopoulos_insurance",
        "papadopoulos_ship",
        "insurance",
        {"amount": 250000, "currency": "EUR"},
        "Cargo is insured up to 250,000 euros.",
        "Insurance certificate received.",
    ),
    F(
        "bjorn_glass",
        "bjorn",
        "delivery_instructions",
        "fragile: glassware",
        "His orders are glassware; pack with extra padding.",
        "Björn: two glasses broke last time.",
    ),
    F(
        "zoe_dog",
        "zoe",
        "delivery_instructions",
        "dog on premises",
        "Has a dog; ring and wait at the gate.",
        "Zoë: the dog is friendly but stay outside.",
    ),
    F(
        "sarah_holiday",
        "sarah",
        "availability",
        "away 2026-12-20 to 2027-01-06",
        "Out of office over the holidays until 6 January.",
        "Sarah's out-of-office reply.",
    ),
    F(
        "hooli_stores",
        "hooli",
        "store_count",
        14,
        "Runs fourteen shops across the Midlands.",
        "Hooli opened its fourteenth shop.",
    ),
    F(
        "acme_credit",
        "acme",
        "credit_limit",
        {"amount": 20000, "currency": "USD"},
        "Can buy on account up to 20,000 dollars.",
        "Finance approved Acme's credit line.",
    ),
    F(
        "initech_po",
        "initech",
        "po_required",
        True,
        "Every order needs a purchase order number or it is rejected.",
        "Initech rejected an order without a purchase order number.",
    ),
    F(
        "dana_newsletter",
        "dana",
        "marketing_consent",
        False,
        "Unsubscribed from the newsletter; no marketing mail.",
        "Dana clicked unsubscribe.",
    ),
    F(
        "umbrella_hazmat",
        "umbrella",
        "dangerous_goods",
        "not accepted",
        "Won't accept dangerous goods such as batteries.",
        "Umbrella refused a pallet of batteries.",
    ),
    F(
        "globex_vat",
        "globex",
        "vat_id",
        "DE811234567",
        "VAT number DE811234567.",
        "Globex sent its VAT registration.",
    ),
    F(
        "liwei_wechat",
        "liwei",
        "contact_channel",
        "WeChat",
        "Reachable on WeChat, not e-mail.",
        "Li Wei: message me on WeChat.",
    ),
    F(
        "tomas_language",
        "tomas",
        "preferred_language",
        "es",
        "Spanish speaker; English is fine by e-mail.",
        "Tomás wrote in Spanish.",
    ),
    F(
        "marcus_birthday",
        "marcus",
        "birthday",
        "03-14",
        "Birthday on 14 March; send a card.",
        "Marcus mentioned his birthday.",
    ),
    F(
        "priya_timezone",
        "priya",
        "timezone",
        "Europe/London",
        "Based in London.",
        "Priya's signature says London.",
    ),
    F(
        "giorgos_language",
        "giorgos",
        "preferred_language",
        "el",
        "Speaks Greek and some German, no English.",
        "Γιώργος wrote in Greek.",
    ),
    F(
        "tck4471_priority",
        "tck4471",
        "priority",
        "urgent",
        "Escalated: answer within four hours.",
        "Support lead escalated the ticket.",
    ),
    # Issue 45's: two or three entities.
    F(
        "jurgen_owner",
        "jurgen",
        "employer",
        {"organisation": Ref("muller_sohne"), "role": "owner"},
        "Runs the family business.",
        "Jürgen owns Müller & Söhne.",
    ),
    F(
        "giorgos_carrier",
        "giorgos",
        "preferred_carrier",
        {"carrier": Ref("papadopoulos_ship")},
        "Ships everything with his family's firm.",
        "Γιώργος: use my cousin's shipping company.",
    ),
    F(
        "agnieszka_employer",
        "agnieszka",
        "employer",
        {"organisation": Ref("kowalski_meble"), "role": "head buyer"},
        "Agnieszka is head buyer at the furniture maker.",
        "Agnieszka signs the purchase orders at Kowalski Meble.",
    ),
    F(
        "sam_employer",
        "sam",
        "employer",
        {"organisation": Ref("blueharbor"), "role": "dispatcher"},
        "Sam dispatches the trucks.",
        "Sam Okafor from dispatch called.",
    ),
    F(
        "inv88120_billing",
        "inv88120",
        "billing",
        {"bill_to": Ref("globex"), "status": "overdue"},
        "Invoice INV-88120 is 45 days overdue.",
        "Dunning run: INV-88120 still open.",
    ),
    F(
        "rma5531_order",
        "rma5531",
        "return_of",
        {"order": Ref("ord2040"), "reason": "damaged in transit"},
        "Returned because it arrived damaged.",
        "RMA opened for the damaged delivery.",
    ),
    F(
        "so78_shipping",
        "so78",
        "shipping",
        {"customer": Ref("francois"), "carrier": Ref("blueharbor"), "to": "3 Rue Lafayette"},
        "Ships to Lyon, 3 Rue Lafayette.",
        "SO-78-B/1 booked with the carrier.",
    ),
    F(
        "tck4471_issue",
        "tck4471",
        "complaint",
        {"customer": Ref("marcus"), "order": Ref("ord1002")},
        "Customer complains the order arrived two weeks late.",
        "Ticket opened after an angry call.",
    ),
    F(
        "umbrella_carrier",
        "umbrella",
        "subcontractor",
        {"trucking": Ref("blueharbor")},
        "Subcontracts long-haul trucking.",
        "Umbrella's trucks were from another firm.",
    ),
    F(
        "stark_supplier",
        "stark",
        "supplier",
        {"sensors": Ref("initech")},
        "Buys the sensors for its monitors from them.",
        "Stark's bill of materials.",
    ),
    F(
        "northwind_parent",
        "northwind",
        "parent_company",
        Ref("globex"),
        "A subsidiary since 2024.",
        "Press release about the acquisition.",
    ),
    F(
        "priya_referral",
        "priya",
        "referred_by",
        Ref("eleni"),
        "Came to us through a referral.",
        "Priya: Eleni recommended you.",
    ),
    F(
        "liwei_wangwei",
        "liwei",
        "conflict_of_interest",
        Ref("wangwei"),
        "Business partners; never send one's quotes to the other.",
        "Compliance note.",
    ),
    F(
        "zhangmin_buyer",
        "zhangmin",
        "authorised_buyer_for",
        Ref("wangwei"),
        "Is his assistant and may place orders for him.",
        "Wang Wei's e-mail authorising Zhang Min.",
    ),
    F(
        "marcus_split",
        "marcus",
        "shipping_preference",
        {"order": Ref("so77"), "shipments": 2},
        "Wants the sales order split in two shipments.",
        "Marcus: send half now, half next month.",
    ),
    F(
        "bjorn_hooli",
        "bjorn",
        "employer",
        {"organisation": Ref("hooli"), "role": "store manager"},
        "Manages one of their stores.",
        "Björn's business card.",
    ),
    F(
        "zoe_stark",
        "zoe",
        "handles_returns_for",
        Ref("stark"),
        "Handles their returns.",
        "Zoë took over the returns desk.",
    ),
    F(
        "tomas_jose",
        "tomas",
        "household",
        Ref("jose"),
        "Lives with him; either may sign.",
        "Tomás: José can sign for me.",
    ),
    F(
        "malgorzata_lukasz",
        "malgorzata",
        "pays_for",
        Ref("lukasz"),
        "Pays his invoices.",
        "Gosia paid Łukasz's invoice again.",
    ),
    F(
        "nikos_eleni",
        "nikos",
        "spouse",
        Ref("eleni"),
        "Married; gift orders go to both.",
        "Nikos: it's for my wife too.",
    ),
    F(
        "francois_supplier",
        "francois",
        "preferred_supplier",
        Ref("muller_sohne"),
        "Buys kitchen fittings from them through us.",
        "François asked for the German fittings again.",
    ),
    F(
        "ord1002_customer",
        "ord1002",
        "customer",
        Ref("acme"),
        "Replacement order for the broken pumps.",
        "Acme reordered the pumps.",
    ),
    F(
        "globex_competitors",
        "globex",
        "competitors",
        [Ref("initech"), Ref("umbrella")],
        "Never mention these two in their proposals.",
        "Globex's buyer was annoyed by a competitor reference.",
    ),
    F(
        "hooli_importer",
        "hooli",
        "importer",
        Ref("papadopoulos_ship"),
        "Imports its stock through Piraeus.",
        "Hooli's import papers.",
    ),
    F(
        "dana_whitfield_not",
        "dana_whitfield",
        "not_to_confuse_with",
        Ref("dana"),
        "Not related; check the surname before sending.",
        "A parcel went to the wrong Dana.",
    ),
    F(
        "chenjing_employer",
        "chenjing",
        "employer",
        {"organisation": Ref("stark"), "role": "procurement officer"},
        "Buys for the hospital supplies division.",
        "陈静 signs Stark's orders.",
    ),
    F(
        "ord2040_customer",
        "ord2040",
        "customer",
        Ref("eleni"),
        "Ordered for her pharmacy.",
        "Eleni's pharmacy order.",
    ),
    F(
        "kowalski_installer",
        "kowalski_meble",
        "installer",
        Ref("lukasz"),
        "Delivers and assembles their furniture in Warsaw.",
        "Kowalski Meble: Łukasz does our assembly.",
    ),
    F(
        "stark_warehouse",
        "stark",
        "warehouse_operator",
        Ref("umbrella"),
        "Its warehouse is run by a logistics firm.",
        "Stark outsourced the warehouse.",
    ),
    F(
        "acme_contact",
        "acme",
        "invoice_contact",
        {"person": Ref("priya"), "cc": Ref("sarah")},
        "Invoices go to Priya, copy to our account manager.",
        "Acme: send invoices to Priya Raman.",
    ),
)

FIRST = [
    "Alice",
    "Ben",
    "Carla",
    "David",
    "Elena",
    "Frank",
    "Grace",
    "Hugo",
    "Ines",
    "Jonas",
    "Karin",
    "Leo",
    "Maria",
    "Nils",
    "Olga",
    "Pablo",
    "Rosa",
    "Stefan",
    "Tara",
    "Victor",
    "Wanda",
    "Yusuf",
]
LAST = [
    "Adams",
    "Berg",
    "Costa",
    "Dahl",
    "Evans",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Larsen",
    "Moreau",
    "Novak",
    "Olsen",
    "Petrov",
    "Quinn",
    "Rossi",
    "Schmidt",
    "Torres",
    "Weber",
    "Young",
]
STREETS = [
    "Oak",
    "Maple",
    "Pine",
    "Cedar",
    "Birch",
    "Harbor",
    "Mill",
    "Station",
    "Church",
    "Market",
    "Bridge",
    "Park",
]


def world(filler: int = 120, seed: int = 44) -> World:
    """The named entities and facts, routine facts of the named entities, then ``filler``
    look-alike customers (issue 44's generator, unchanged, so its filler is the same)."""
    w = World(entities=list(NAMED), facts=list(FACTS))
    _routine(w, random.Random(seed + 1))
    _filler(w, filler, random.Random(seed))
    return w


PEOPLE = ("customer", "person")


def _routine(w: World, rng: random.Random) -> None:
    """The everyday facts a CRM holds about each named entity, where no hand-written fact
    of that field exists: distractors on the same subjects as the answers."""
    have = {(f.subject, f.field) for f in w.facts}

    def add(entity: Entity, name: str, value: Any, statement: str) -> None:
        if (entity.key, name) not in have:
            w.facts.append(Fact(f"~{entity.key}_{name}", entity.key, name, value, statement, ""))

    for n, entity in enumerate(NAMED):
        if entity.kind in PEOPLE:
            add(entity, "phone", f"+1 555 {2200 + n}", "Mobile number.")
            add(entity, "email", f"contact{n}@example.com", "E-mail on file.")
            add(
                entity,
                "delivery_address",
                f"{rng.randint(1, 99)} {rng.choice(STREETS)} Street",
                "Usual delivery address.",
            )
        elif entity.kind == "company":
            add(entity, "payment_terms", f"net {rng.choice((15, 45, 60))}", "Standard terms.")
            add(entity, "billing_currency", rng.choice(("USD", "GBP")), "Billing currency.")
            add(entity, "phone", f"+1 555 {2200 + n}", "Switchboard.")
            add(entity, "head_office", f"{rng.randint(1, 99)} Market Square", "Head office.")
        else:
            add(entity, "status", rng.choice(("open", "in progress")), "Current status.")
            add(
                entity,
                "created_on",
                f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}",
                "Opened.",
            )


def _filler(w: World, count: int, rng: random.Random) -> None:
    """Look-alike customers with the same fields as the named ones."""
    for n in range(count):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        key = f"~c{n}"
        w.entities.append(Entity(key, name, "customer", ref=f"CRM-C-{2000 + n}"))
        street = f"{rng.randint(1, 99)} {rng.choice(STREETS)} Street"
        w.facts.append(
            Fact(
                f"{key}_address",
                key,
                "delivery_address",
                street,
                f"Deliveries go to {street}.",
                f"{name}: deliver to {street}.",
            )
        )
        w.facts.append(
            Fact(
                f"{key}_terms",
                key,
                "payment_terms",
                f"net {rng.choice((15, 45, 60))}",
                "Pays on the usual terms.",
                f"{name} payment terms agreed.",
            )
        )
        if n % 3 == 0:
            phone = f"+1 555 {1000 + n}"
            w.facts.append(
                Fact(f"{key}_phone", key, "phone", phone, "Office phone.", f"{name} phone.")
            )
        if n % 4 == 0:
            order = f"~o{n}"
            ref = f"ORD-{3000 + n}"
            w.entities.append(Entity(order, f"Order {ref}", "order", ref=ref))
            w.facts.append(
                Fact(
                    f"{key}_order",
                    key,
                    "active_order",
                    {"order": Ref(order), "ships_to": street},
                    f"Active order ships to {street}.",
                    f"Order {ref} for {name}.",
                )
            )


def categories() -> list[str]:
    return sorted({q.category for q in QUERIES})


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))
    return ordered[index]


def rank_of(found: list[str], wanted: str | None) -> int | None:
    """The 1-based rank of ``wanted`` among the keys found, or None."""
    return found.index(wanted) + 1 if wanted in found else None


def scores(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of issue 45 from rows of ``category``, ``rank``, ``returned`` (how many
    results) and ``ms``: recall@1, recall@5 and MRR over the answerable questions, the
    share of no-answer questions answered with nothing, latency p50/p95 over all."""

    def answerable(part: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(part)
        ranks = [r["rank"] for r in part]
        return {
            "n": n,
            "recall_at_1": round(sum(1 for k in ranks if k == 1) / n, 3),
            "recall_at_5": round(sum(1 for k in ranks if k and k <= 5) / n, 3),
            "mrr": round(sum(1 / k for k in ranks if k) / n, 3),
            "answered_nothing": sum(1 for r in part if r["returned"] == 0),
        }

    def no_answer(part: list[dict[str, Any]]) -> dict[str, Any]:
        empty = sum(1 for r in part if r["returned"] == 0)
        return {"n": len(part), "empty": empty, "empty_share": round(empty / len(part), 3)}

    asked = [r for r in rows if r["category"] != NO_ANSWER]
    unanswerable = [r for r in rows if r["category"] == NO_ANSWER]
    ms = [r["ms"] for r in rows]
    return {
        "overall": answerable(asked),
        "no_answer": no_answer(unanswerable) if unanswerable else None,
        "latency_ms": {
            "p50": round(percentile(ms, 0.50), 2),
            "p95": round(percentile(ms, 0.95), 2),
        },
        "categories": {
            c: answerable([r for r in asked if r["category"] == c])
            for c in sorted({r["category"] for r in asked})
        },
    }


TARGETS = {"recall_at_1": 0.85, "recall_at_5": 0.95, "mrr": 0.90, "no_answer": 0.90}


def met(result: dict[str, Any]) -> dict[str, bool]:
    overall = result["overall"]
    empty = (result.get("no_answer") or {}).get("empty_share", 0.0)
    return {
        "recall_at_1": overall["recall_at_1"] >= TARGETS["recall_at_1"],
        "recall_at_5": overall["recall_at_5"] >= TARGETS["recall_at_5"],
        "mrr": overall["mrr"] >= TARGETS["mrr"],
        "no_answer": empty >= TARGETS["no_answer"],
    }


def table(results: list[tuple[str, dict[str, Any]]]) -> str:
    """One line a system: recall@1, recall@5, MRR, no-answer share, p50/p95."""
    lines = [
        "| system | recall@1 | recall@5 | MRR | no answer → nothing | p50 / p95 ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results:
        o, lat = r["overall"], r["latency_ms"]
        na = r.get("no_answer") or {"empty": 0, "n": 0, "empty_share": 0.0}
        lines.append(
            f"| {name} | {o['recall_at_1']:.2f} | {o['recall_at_5']:.2f} | {o['mrr']:.2f} | "
            f"{na['empty_share']:.2f} ({na['empty']}/{na['n']}) | "
            f"{lat['p50']:.1f} / {lat['p95']:.1f} |"
        )
    return "\n".join(lines)


def print_categories(name: str, result: dict[str, Any]) -> None:
    o = result["overall"]
    print(
        f"{name}: {o['n']} answerable, recall@1 {o['recall_at_1']}, recall@5 "
        f"{o['recall_at_5']}, MRR {o['mrr']}, nothing returned for {o['answered_nothing']}"
    )
    for category, line in result["categories"].items():
        print(
            f"  {category:<16} n={line['n']:<3} r@1 {line['recall_at_1']:<6} "
            f"r@5 {line['recall_at_5']:<6} MRR {line['mrr']:<6} empty {line['answered_nothing']}"
        )
    na = result.get("no_answer")
    if na:
        print(
            f"  {NO_ANSWER:<16} n={na['n']:<3} answered with nothing "
            f"{na['empty']} ({na['empty_share']})"
        )


def summary(filler: int = 120, seed: int = 44) -> dict[str, Any]:
    """The set's size, for the reports."""
    w = world(filler, seed)
    named = {e.key for e in NAMED}
    named_facts = [f for f in w.facts if f.subject in named]
    count: dict[str, int] = {}
    for q in QUERIES:
        count[q.category] = count.get(q.category, 0) + 1
    return {
        "named_entities": len(NAMED),
        "entities": len(w.entities),
        "named_facts": len(named_facts),
        "hand_written_facts": len(FACTS),
        "facts_naming_two_or_three": sum(1 for f in FACTS if any(True for _ in w.refs(f.value))),
        "facts": len(w.facts),
        "questions": len(QUERIES),
        "answerable": sum(1 for q in QUERIES if q.category != NO_ANSWER),
        "by_category": dict(sorted(count.items())),
    }
