"""Profile a CSV file: column types, null counts and numeric ranges."""
import sys

import pandas as pd

frame = pd.read_csv(sys.argv[1])
print(frame.dtypes.to_string())
print(frame.isna().sum().to_string())
print(frame.describe().to_string())
