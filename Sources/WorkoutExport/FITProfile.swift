/// The messages as this encoder writes them: global numbers and field numbers, base types,
/// scales and offsets from Garmin's FIT global profile (the `profile` of the FIT SDK 21.218).
public enum FITProfile {
  public static let fileID = FITMessageDefinition(
    global: 0,
    fields: [
      .init(0, .enumeration),  // type: activity 4
      .init(1, .uint16),  // manufacturer
      .init(2, .uint16),  // product
      .init(3, .uint32z),  // serial_number
      .init(4, .uint32),  // time_created
    ])
  public static let fileCreator = FITMessageDefinition(global: 49, fields: [.init(0, .uint16)])  // software_version
  public static let deviceInfo = FITMessageDefinition(
    global: 23,
    fields: [
      .init(253, .uint32),  // timestamp
      .init(0, .uint8),  // device_index: 0 the creator
      .init(2, .uint16),  // manufacturer
      .init(3, .uint32z),  // serial_number
      .init(4, .uint16),  // product
      .init(5, .uint16),  // software_version, scale 100
      .init(27, .string, size: 16),  // product_name
    ])
  public static let event = FITMessageDefinition(
    global: 21,
    fields: [
      .init(253, .uint32),  // timestamp
      .init(0, .enumeration),  // event
      .init(1, .enumeration),  // event_type
    ])
  /// An `event` the rider marked: a drink or a note from the phone.
  public static let marker = FITMessageDefinition(
    global: 21,
    fields: [
      .init(253, .uint32),  // timestamp
      .init(0, .enumeration),  // event: user_marker 32
      .init(1, .enumeration),  // event_type: marker 3
      .init(3, .uint32),  // data: a drink's millilitres
    ])
  public static let record = FITMessageDefinition(
    global: 20,
    fields: [
      .init(253, .uint32),  // timestamp
      .init(0, .sint32),  // position_lat, semicircles
      .init(1, .sint32),  // position_long, semicircles
      .init(5, .uint32),  // distance, scale 100, m
      .init(6, .uint16),  // speed, scale 1000, m/s
      .init(73, .uint32),  // enhanced_speed, scale 1000, m/s
      .init(2, .uint16),  // altitude, scale 5, offset 500, m
      .init(78, .uint32),  // enhanced_altitude, scale 5, offset 500, m
      .init(3, .uint8),  // heart_rate, bpm
      .init(4, .uint8),  // cadence, rpm
      .init(7, .uint16),  // power, W
      .init(13, .sint8),  // temperature, °C
    ])
  public static let lap = FITMessageDefinition(
    global: 19,
    fields: [
      .init(253, .uint32),  // timestamp: the lap's end
      .init(254, .uint16),  // message_index
      .init(0, .enumeration),  // event: lap 9
      .init(1, .enumeration),  // event_type: stop 1
      .init(2, .uint32),  // start_time
      .init(7, .uint32),  // total_elapsed_time, scale 1000
      .init(8, .uint32),  // total_timer_time, scale 1000
      .init(9, .uint32),  // total_distance, scale 100
      .init(13, .uint16),  // avg_speed, scale 1000
      .init(14, .uint16),  // max_speed, scale 1000
      .init(15, .uint8),  // avg_heart_rate
      .init(16, .uint8),  // max_heart_rate
      .init(17, .uint8),  // avg_cadence
      .init(18, .uint8),  // max_cadence
      .init(19, .uint16),  // avg_power
      .init(20, .uint16),  // max_power
      .init(21, .uint16),  // total_ascent
      .init(22, .uint16),  // total_descent
      .init(24, .enumeration),  // lap_trigger
      .init(25, .enumeration),  // sport
      .init(39, .enumeration),  // sub_sport
      .init(11, .uint16),  // total_calories, kcal
      .init(33, .uint16),  // normalized_power, W
      .init(41, .uint32),  // total_work, J
    ])
  public static let session = FITMessageDefinition(
    global: 18,
    fields: [
      .init(253, .uint32),  // timestamp: the end
      .init(254, .uint16),  // message_index
      .init(0, .enumeration),  // event: session 8
      .init(1, .enumeration),  // event_type: stop 1
      .init(2, .uint32),  // start_time
      .init(5, .enumeration),  // sport
      .init(6, .enumeration),  // sub_sport
      .init(7, .uint32),  // total_elapsed_time, scale 1000
      .init(8, .uint32),  // total_timer_time, scale 1000
      .init(9, .uint32),  // total_distance, scale 100
      .init(14, .uint16),  // avg_speed, scale 1000
      .init(15, .uint16),  // max_speed, scale 1000
      .init(16, .uint8),  // avg_heart_rate
      .init(17, .uint8),  // max_heart_rate
      .init(18, .uint8),  // avg_cadence
      .init(19, .uint8),  // max_cadence
      .init(20, .uint16),  // avg_power
      .init(21, .uint16),  // max_power
      .init(22, .uint16),  // total_ascent
      .init(23, .uint16),  // total_descent
      .init(25, .uint16),  // first_lap_index
      .init(26, .uint16),  // num_laps
      .init(28, .enumeration),  // trigger: activity_end 0
      .init(11, .uint16),  // total_calories, kcal
      .init(34, .uint16),  // normalized_power, W
      .init(35, .uint16),  // training_stress_score, scale 10
      .init(36, .uint16),  // intensity_factor, scale 1000
      .init(45, .uint16),  // threshold_power, W
      .init(48, .uint32),  // total_work, J
      .init(192, .uint8),  // workout_feel: 0-100, low feeling bad
      .init(193, .uint8),  // workout_rpe: Borg CR10 (0-10) × 10
    ])
  public static let activity = FITMessageDefinition(
    global: 34,
    fields: [
      .init(253, .uint32),  // timestamp
      .init(0, .uint32),  // total_timer_time, scale 1000
      .init(1, .uint16),  // num_sessions
      .init(2, .enumeration),  // type: manual 0
      .init(3, .enumeration),  // event: activity 26
      .init(4, .enumeration),  // event_type: stop 1
      .init(5, .uint32),  // local_timestamp (local_date_time)
    ])
  /// time_in_zone (216) of one lap or session: the fields of the quantities that have zones,
  /// each zone's time and the high boundary of every zone but the last (open above), as
  /// Garmin's devices write them.
  public static func timeInZone(heartRateZones: Int?, powerZones: Int?) -> FITMessageDefinition {
    var fields: [FITFieldDefinition] = [
      .init(253, .uint32),  // timestamp
      .init(0, .uint16),  // reference_mesg: lap 19, session 18
      .init(1, .uint16),  // reference_index: the lap's or session's message_index
    ]
    if let zones = heartRateZones {
      fields += [
        .init(2, .uint32, size: 4 * zones),  // time_in_hr_zone, s, scale 1000
        .init(6, .uint8, size: zones - 1),  // hr_zone_high_boundary, bpm
        .init(10, .enumeration),  // hr_calc_type: custom 0, percent_hrr 2
        .init(11, .uint8),  // max_heart_rate
        .init(12, .uint8),  // resting_heart_rate
      ]
    }
    if let zones = powerZones {
      fields += [
        .init(5, .uint32, size: 4 * zones),  // time_in_power_zone, s, scale 1000
        .init(9, .uint16, size: 2 * (zones - 1)),  // power_zone_high_boundary, W
        .init(14, .enumeration),  // pwr_calc_type: custom 0, percent_ftp 1
        .init(15, .uint16),  // functional_threshold_power, W
      ]
    }
    return FITMessageDefinition(global: 216, fields: fields)
  }
  /// developer_data_id (207): the application whose developer fields follow (FIT 2.0 "Developer
  /// Data"), before its `field_description`s.
  public static let developerDataID = FITMessageDefinition(
    global: 207,
    fields: [
      .init(1, .byte, size: 16),  // application_id: a UUID, the same in every file
      .init(2, .uint16),  // manufacturer_id
      .init(3, .uint8),  // developer_data_index
      .init(4, .uint32),  // application_version
    ])
  /// field_description (206): one developer field, named, its base type and units.
  public static let fieldDescription = FITMessageDefinition(
    global: 206,
    fields: [
      .init(0, .uint8),  // developer_data_index
      .init(1, .uint8),  // field_definition_number
      .init(2, .uint8),  // fit_base_type_id
      .init(3, .string, size: 24),  // field_name
      .init(8, .string, size: 8),  // units
    ])
  /// `record` with the road's feel as developer fields: the profile has no record field for
  /// them. Their numbers in the `field_description`s this encoder writes.
  public static let vibrationField: UInt8 = 0
  public static let peakAccelerationField: UInt8 = 1
  public static let recordWithRoadFeel = FITMessageDefinition(
    global: record.global, fields: record.fields,
    developerFields: [.init(vibrationField, .float32), .init(peakAccelerationField, .float32)])
  public static let hrv = FITMessageDefinition(
    global: 78,
    fields: [
      .init(0, .uint16, size: 2 * FITActivityWriter.intervalsPerHRV)  // time: RR intervals, s, scale 1000
    ])
}
