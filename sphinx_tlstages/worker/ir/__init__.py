"""Reading facts and schedules off TileLang's IR."""
