import os
from hypothesis import settings

# "ci" is the profile CI and the README's test command use; "thorough" for long local runs.
settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
