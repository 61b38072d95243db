"""Integrations: orcamem as a part of the frameworks users already run (LangGraph's store,
LangChain's retriever, the OpenAI Agents SDK's session).

Each module is a thin skin over ``Memory``, like ``interfaces``, and sits at that level of the
import rule: it imports the engine's package face, never a store, and nothing in orcamem imports
it. Each needs its framework installed (``pip install 'orcamem[integrations]'``); importing
``orcamem`` never does.
"""
