"""A project's own tools module: the name must not collide with graphwright's."""


def shout(text: str) -> str:
    return text.upper() + "!"
