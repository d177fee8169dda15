// Indonesian mobile numbers in the forms 08xx, 62xx and +62xx, normalised to +62 and the national
// number without its leading 0. Valid national numbers: 8 followed by 8 to 11 digits.

const SEPARATORS = /[\s\-.()]/g
const NATIONAL_MOBILE = /^8\d{8,11}$/

export function normalizePhone(input: string): string | null {
  const compact = input.replace(SEPARATORS, '')
  let national: string
  if (compact.startsWith('+62')) national = compact.slice(3)
  else if (compact.startsWith('62')) national = compact.slice(2)
  else if (compact.startsWith('0')) national = compact.slice(1)
  else return null
  return NATIONAL_MOBILE.test(national) ? `+62${national}` : null
}
