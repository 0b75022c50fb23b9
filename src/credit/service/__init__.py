"""The HTTP service: the JSON API, its roles and keys, and the reviewer console.

``create_app(settings)`` (:mod:`credit.service.app`) builds the FastAPI application;
``credit serve`` runs it under uvicorn. Authentication and roles live in
:mod:`credit.service.auth`, hashed API keys in :mod:`credit.service.keys`.
"""
