# An independent model of protocol 3's seal (kernel/src/session/seal.rs), for its known-answer test:
# HChaCha20 written out here, AES-256-GCM from the `cryptography` package.
import struct
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
def rotl(v,c): return ((v<<c)|(v>>(32-c)))&0xffffffff
def qr(s,a,b,c,d):
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],16)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],12)
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],8)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],7)
def hchacha20(key, inp):
    s=[0x61707865,0x3320646e,0x79622d32,0x6b206574]+list(struct.unpack('<8I',key))+list(struct.unpack('<4I',inp))
    for _ in range(10):
        qr(s,0,4,8,12);qr(s,1,5,9,13);qr(s,2,6,10,14);qr(s,3,7,11,15)
        qr(s,0,5,10,15);qr(s,1,6,11,12);qr(s,2,7,8,13);qr(s,3,4,9,14)
    return struct.pack('<8I',*(s[0:4]+s[12:16]))
# the HChaCha20 test vector of draft-irtf-cfrg-xchacha, section 2.2.1
k=bytes(range(32)); n=bytes.fromhex('000000090000004a0000000031415927')
assert hchacha20(k,n).hex()=='82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc'
def seal(base, token, counter, t, fields):
    key=hchacha20(base, struct.pack('<Q',token)+b'shadowrp')
    head=bytes([t|0x80])+struct.pack('<QQ',token,counter)
    nonce=struct.pack('<Q',counter)+bytes([t,0,0,0])
    return head+AESGCM(key).encrypt(nonce, fields, head)
s2c, c2s = bytes([0x11] * 32), bytes([0x22] * 32)
token = 0x0123456789abcdef
# python3 seal_model.py: the three datagrams of `a_sealed_packet_is_aes_256_gcm_under_the_sessions_key`
# a server packet (type 0x10, counter 1)
print(seal(s2c, token, 1, 0x10, b'sealed by protocol 3').hex())
# the server's welcome (type 0x04, counter 0): the client's nonce first among the encrypted fields
print(seal(s2c, token, 0, 0x04, struct.pack('<Q', 77) + bytes([30, 1, 5])).hex())
# a client feedback (type 0x11, counter 1), under the other direction's key
print(seal(c2s, token, 1, 0x11, b'ack').hex())
