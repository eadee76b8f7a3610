/// The error codes of an ATT Error Response (Core Spec Vol 3 Part F §3.4.1.1, table 3.4; the
/// common profile codes 0xE0–0xFF from the Core Specification Supplement, Part B).
public enum ATTErrorCode: Sendable, Hashable, CustomStringConvertible {
  case invalidHandle
  case readNotPermitted
  case writeNotPermitted
  case invalidPDU
  case insufficientAuthentication
  case requestNotSupported
  case invalidOffset
  case insufficientAuthorization
  case prepareQueueFull
  case attributeNotFound
  case attributeNotLong
  case encryptionKeySizeTooShort
  case invalidAttributeValueLength
  case unlikelyError
  case insufficientEncryption
  case unsupportedGroupType
  case insufficientResources
  case databaseOutOfSync
  case valueNotAllowed
  /// 0x80–0x9F: defined by the profile or service.
  case application(UInt8)
  /// 0xE0–0xFF: common profile and service errors (0xFC write request rejected, 0xFD client
  /// characteristic configuration descriptor improperly configured, 0xFE procedure already in
  /// progress, 0xFF out of range).
  case commonProfile(UInt8)
  /// 0x00, 0x14–0x7F, 0xA0–0xDF: reserved for future use.
  case reserved(UInt8)

  private static let named: [ATTErrorCode] = [
    .invalidHandle, .readNotPermitted, .writeNotPermitted, .invalidPDU, .insufficientAuthentication,
    .requestNotSupported, .invalidOffset, .insufficientAuthorization, .prepareQueueFull, .attributeNotFound,
    .attributeNotLong, .encryptionKeySizeTooShort, .invalidAttributeValueLength, .unlikelyError,
    .insufficientEncryption, .unsupportedGroupType, .insufficientResources, .databaseOutOfSync, .valueNotAllowed,
  ]

  public init(rawValue: UInt8) {
    switch rawValue {
    case 0x01...0x13: self = Self.named[Int(rawValue) - 1]
    case 0x80...0x9F: self = .application(rawValue)
    case 0xE0...0xFF: self = .commonProfile(rawValue)
    default: self = .reserved(rawValue)
    }
  }

  public var rawValue: UInt8 {
    switch self {
    case .application(let code), .commonProfile(let code), .reserved(let code): return code
    default: return UInt8(Self.named.firstIndex(of: self)! + 1)
    }
  }

  public var description: String {
    let name: String =
      switch self {
      case .invalidHandle: "Invalid Handle"
      case .readNotPermitted: "Read Not Permitted"
      case .writeNotPermitted: "Write Not Permitted"
      case .invalidPDU: "Invalid PDU"
      case .insufficientAuthentication: "Insufficient Authentication"
      case .requestNotSupported: "Request Not Supported"
      case .invalidOffset: "Invalid Offset"
      case .insufficientAuthorization: "Insufficient Authorization"
      case .prepareQueueFull: "Prepare Queue Full"
      case .attributeNotFound: "Attribute Not Found"
      case .attributeNotLong: "Attribute Not Long"
      case .encryptionKeySizeTooShort: "Encryption Key Size Too Short"
      case .invalidAttributeValueLength: "Invalid Attribute Value Length"
      case .unlikelyError: "Unlikely Error"
      case .insufficientEncryption: "Insufficient Encryption"
      case .unsupportedGroupType: "Unsupported Group Type"
      case .insufficientResources: "Insufficient Resources"
      case .databaseOutOfSync: "Database Out Of Sync"
      case .valueNotAllowed: "Value Not Allowed"
      case .application: "Application Error"
      case .commonProfile(0xFC): "Write Request Rejected"
      case .commonProfile(0xFD): "Client Characteristic Configuration Descriptor Improperly Configured"
      case .commonProfile(0xFE): "Procedure Already in Progress"
      case .commonProfile(0xFF): "Out of Range"
      case .commonProfile: "Common Profile Error"
      case .reserved: "Reserved"
      }
    let code = String(rawValue, radix: 16, uppercase: true)
    return name + " (0x" + (code.count < 2 ? "0" : "") + code + ")"
  }
}
