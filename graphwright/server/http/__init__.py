"""The HTTP face.

The routers (one per resource, named by its path) and what a request goes through on its way
(dependencies, CORS, limits, the user's own app).
"""
