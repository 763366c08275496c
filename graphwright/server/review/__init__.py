"""What the review pages are made of: their HTML and their login cookie."""
