print("shieldbench")
