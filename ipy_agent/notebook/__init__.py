"""The notebook: rendering cells to text, and (later) the bridge to the live front end."""
