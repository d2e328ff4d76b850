print("shieldctl")
