#!/usr/bin/env python3
"""Reads a FIT file with Garmin's own decoder (garmin-fit-sdk) and with fitdecode (CRCs checked),
and prints what the export tests compare, as JSON: decoder errors, integrity, the session's and
the laps' totals and training figures, the time_in_zone messages, the record count, the timer
events and the records' developer fields (the road's feel) by their field_description names."""
import json
import sys

import fitdecode
from garmin_fit_sdk import Decoder, Stream

path = sys.argv[1]
decoder = Decoder(Stream.from_file(path))
integrity = decoder.check_integrity()
decoder = Decoder(Stream.from_file(path))
messages, errors = decoder.read(convert_datetimes_to_dates=False, apply_scale_and_offset=True)
# Times as the file's integers (seconds since the FIT epoch), to compare local_timestamp.
raw, _ = Decoder(Stream.from_file(path)).read(convert_datetimes_to_dates=False, convert_types_to_strings=False)
session = messages.get("session_mesgs", [{}])[0]
records = messages.get("record_mesgs", [])
fitdecode_records = 0
fitdecode_developer = []
with fitdecode.FitReader(path, check_crc=fitdecode.CrcCheck.RAISE) as reader:
    for frame in reader:
        if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record":
            fitdecode_records += 1
            fitdecode_developer.append({f.name: f.value for f in frame.fields
                                        if f.field_def is not None and f.field_def.is_dev and f.value is not None})
# Developer fields: Garmin's decoder keys a record's by the field_description's place.
descriptions = messages.get("field_description_mesgs", [])
names = {d.get("key"): d.get("field_name") for d in descriptions}
developer = [{names.get(k): v for k, v in r.get("developer_fields", {}).items()} for r in records]


def plain(message, keys):
    return {key: message.get(key) for key in keys}


print(json.dumps({
    "errors": [str(e) for e in errors],
    "integrity": integrity,
    "file_type": messages.get("file_id_mesgs", [{}])[0].get("type"),
    "serial_number": messages.get("file_id_mesgs", [{}])[0].get("serial_number"),
    "session": plain(session, ["sport", "total_elapsed_time", "total_timer_time", "total_distance",
                               "avg_heart_rate", "max_heart_rate", "avg_power", "max_power",
                               "total_ascent", "num_laps", "start_time", "timestamp", "sub_sport",
                               "normalized_power", "intensity_factor", "training_stress_score",
                               "threshold_power", "total_work", "total_calories", "workout_rpe",
                               "workout_feel"]),
    "sessions": [plain(s, ["sport", "total_timer_time", "total_distance", "first_lap_index", "num_laps",
                           "avg_heart_rate", "message_index", "normalized_power", "total_work",
                           "intensity_factor"]) for s in messages.get("session_mesgs", [])],
    "laps": [plain(lap, ["total_timer_time", "total_distance", "lap_trigger", "avg_power", "sport",
                         "normalized_power", "total_work", "total_calories"])
             for lap in messages.get("lap_mesgs", [])],
    "time_in_zone": [plain(t, ["reference_mesg", "reference_index", "time_in_hr_zone", "time_in_power_zone",
                               "hr_zone_high_boundary", "power_zone_high_boundary", "hr_calc_type",
                               "pwr_calc_type", "max_heart_rate", "resting_heart_rate",
                               "functional_threshold_power"])
                     for t in messages.get("time_in_zone_mesgs", [])],
    "records": len(records),
    "fitdecode_records": fitdecode_records,
    "first_record": plain(records[0], ["timestamp", "position_lat", "position_long", "heart_rate", "power",
                                       "distance", "enhanced_speed", "enhanced_altitude"]) if records else None,
    "timer_events": [[e.get("event"), e.get("event_type"), e.get("timestamp")]
                     for e in messages.get("event_mesgs", []) if e.get("event") == "timer"],
    "markers": [[e.get("timestamp"), e.get("data")] for e in raw.get("event_mesgs", [])
                if e.get("event") == 32 and e.get("event_type") == 3],
    "activity_sessions": messages.get("activity_mesgs", [{}])[0].get("num_sessions"),
    "activity": plain(raw.get("activity_mesgs", [{}])[0], ["timestamp", "local_timestamp"]),
    "developer_ids": [[m.get("developer_data_index"), m.get("application_version")]
                      for m in messages.get("developer_data_id_mesgs", [])],
    "field_descriptions": [[d.get("field_definition_number"), d.get("field_name"), d.get("units"),
                            d.get("fit_base_type_id")] for d in descriptions],
    "developer": developer,
    "fitdecode_developer": fitdecode_developer,
    "hrv": [t for m in messages.get("hrv_mesgs", []) for t in m.get("time", []) if t is not None],
}))
