"""Pages in headless Chromium: the review page, drawings, the JS SDK from another origin."""
