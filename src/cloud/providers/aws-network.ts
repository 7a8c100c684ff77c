// The security group a created instance sits in: one per set of inbound rules
// in the region's default VPC, named muster-<key> and found by its tag
// muster-group (DescribeSecurityGroups filtered by vpc-id and tag:…). With no
// rules it lets nothing in. Its ingress is compared with what it should be on
// every use and repaired: extra permissions revoked, missing ones authorized.
// AuthorizeSecurityGroupIngress straight after CreateSecurityGroup may answer
// InvalidGroup.NotFound (EC2 is eventually consistent:
// https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html); that is retried.
import { MusterError } from '../../errors.ts'
import { isCode } from '../http.ts'
import { backoffMs } from '../retry.ts'
import { inboundKey, inboundRules, type Inbound, type ProviderContext } from '../provider.ts'
import type { XmlNode } from './xml.ts'
import { items, textOf } from './xml.ts'

type Call = (region: string, action: string, params?: Record<string, string>, idempotent?: boolean) => Promise<XmlNode>

/** One ingress grant, flattened: protocol, ports, and one source. */
interface Grant {
  protocol: string
  from: string | undefined
  to: string | undefined
  source: { kind: 'IpRanges'; key: 'CidrIp'; value: string } | { kind: 'Ipv6Ranges'; key: 'CidrIpv6'; value: string } | { kind: 'Groups'; key: 'GroupId'; value: string } | { kind: 'PrefixListIds'; key: 'PrefixListId'; value: string }
}

const grantKey = (g: Grant) => `${g.protocol}:${g.from ?? ''}-${g.to ?? ''}:${g.source.value}`

function grantsOf(group: XmlNode): Grant[] {
  return items(group, 'ipPermissions').flatMap((p) => {
    const base = { protocol: textOf(p, 'ipProtocol') ?? '-1', from: textOf(p, 'fromPort'), to: textOf(p, 'toPort') }
    return [
      ...items(p, 'ipRanges').map((r) => ({ ...base, source: { kind: 'IpRanges', key: 'CidrIp', value: textOf(r, 'cidrIp') ?? '' } }) as Grant),
      ...items(p, 'ipv6Ranges').map((r) => ({ ...base, source: { kind: 'Ipv6Ranges', key: 'CidrIpv6', value: textOf(r, 'cidrIpv6') ?? '' } }) as Grant),
      ...items(p, 'groups').map((r) => ({ ...base, source: { kind: 'Groups', key: 'GroupId', value: textOf(r, 'groupId') ?? '' } }) as Grant),
      ...items(p, 'prefixListIds').map((r) => ({ ...base, source: { kind: 'PrefixListIds', key: 'PrefixListId', value: textOf(r, 'prefixListId') ?? '' } }) as Grant),
    ]
  })
}

function wanted(inbound: Inbound): Grant[] {
  return inboundRules(inbound).map((r) => ({
    protocol: 'tcp',
    from: String(r.port),
    to: String(r.port),
    source: r.cidr.includes(':') ? { kind: 'Ipv6Ranges', key: 'CidrIpv6', value: r.cidr } : { kind: 'IpRanges', key: 'CidrIp', value: r.cidr },
  }))
}

function permissionParams(groupId: string, grants: Grant[]): Record<string, string> {
  const p: Record<string, string> = { GroupId: groupId }
  grants.forEach((g, i) => {
    const n = `IpPermissions.${i + 1}`
    p[`${n}.IpProtocol`] = g.protocol
    if (g.from !== undefined) p[`${n}.FromPort`] = g.from
    if (g.to !== undefined) p[`${n}.ToPort`] = g.to
    p[`${n}.${g.source.kind}.1.${g.source.key}`] = g.source.value
  })
  return p
}

export class AwsNetwork {
  constructor(
    private readonly call: Call,
    private readonly ctx: Pick<ProviderContext, 'retry'>,
  ) {}

  /** The region's default VPC (RunInstances without a subnet launches there). */
  async defaultVpc(region: string): Promise<string> {
    const r = await this.call(region, 'DescribeVpcs', { 'Filter.1.Name': 'is-default', 'Filter.1.Value.1': 'true' })
    const id = textOf(items(r, 'vpcSet')[0], 'vpcId')
    if (!id) throw new MusterError('cloud-refused', `aws has no default VPC in ${region}; muster launches instances there. To fix: create one (aws ec2 create-default-vpc --region ${region}) or pick another region.`)
    return id
  }

  private async find(region: string, vpc: string, name: string): Promise<XmlNode | undefined> {
    const r = await this.call(region, 'DescribeSecurityGroups', { 'Filter.1.Name': 'vpc-id', 'Filter.1.Value.1': vpc, 'Filter.2.Name': 'tag:muster-group', 'Filter.2.Value.1': name })
    return items(r, 'securityGroupInfo')[0]
  }

  /** The group for these rules in the default VPC, created or repaired as needed; its id. */
  async group(region: string, inbound: Inbound): Promise<string> {
    const vpc = await this.defaultVpc(region)
    const name = `muster-${inboundKey(inbound)}`
    let group = await this.find(region, vpc, name)
    let id = textOf(group, 'groupId')
    if (!id) {
      try {
        const created = await this.call(region, 'CreateSecurityGroup', {
          GroupName: name,
          GroupDescription: 'muster: created machines (inbound only what muster was told to open)',
          VpcId: vpc,
          'TagSpecification.1.ResourceType': 'security-group',
          'TagSpecification.1.Tag.1.Key': 'muster-group',
          'TagSpecification.1.Tag.1.Value': name,
          'TagSpecification.1.Tag.2.Key': 'managed-by',
          'TagSpecification.1.Tag.2.Value': 'muster',
        }, false)
        id = textOf(created, 'groupId')
      } catch (e) {
        // Another Platform made it meanwhile, or a group of that name lost its tag: the one in this VPC by name.
        if (!isCode(e, 'InvalidGroup.Duplicate')) throw e
        const r = await this.call(region, 'DescribeSecurityGroups', { 'Filter.1.Name': 'vpc-id', 'Filter.1.Value.1': vpc, 'Filter.2.Name': 'group-name', 'Filter.2.Value.1': name })
        group = items(r, 'securityGroupInfo')[0]
        id = textOf(group, 'groupId')
      }
      if (!id) throw new MusterError('cloud-provider-error', `aws did not answer the id of security group ${name}.`)
    }
    await this.repair(region, id, group ? grantsOf(group) : [], wanted(inbound))
    return id
  }

  /** A group kept from an earlier attempt (by id): its rules repaired; when it is gone, the group for these rules. */
  async repairKept(region: string, groupId: string, inbound: Inbound): Promise<string> {
    const r = await this.call(region, 'DescribeSecurityGroups', { 'Filter.1.Name': 'group-id', 'Filter.1.Value.1': groupId })
    const group = items(r, 'securityGroupInfo')[0]
    if (!group) return this.group(region, inbound)
    await this.repair(region, groupId, grantsOf(group), wanted(inbound))
    return groupId
  }

  private async repair(region: string, groupId: string, have: Grant[], want: Grant[]): Promise<void> {
    const wantKeys = new Set(want.map(grantKey))
    const haveKeys = new Set(have.map(grantKey))
    const extra = have.filter((g) => !wantKeys.has(grantKey(g)))
    const missing = want.filter((g) => !haveKeys.has(grantKey(g)))
    if (extra.length > 0) await this.call(region, 'RevokeSecurityGroupIngress', permissionParams(groupId, extra), true)
    if (missing.length === 0) return
    for (let attempt = 0; ; attempt++) {
      try {
        await this.call(region, 'AuthorizeSecurityGroupIngress', permissionParams(groupId, missing), false)
        return
      } catch (e) {
        if (isCode(e, 'InvalidPermission.Duplicate')) return
        if (!isCode(e, 'InvalidGroup.NotFound') || attempt >= 6) throw e
        await this.ctx.retry.sleep(backoffMs(this.ctx.retry, attempt))
      }
    }
  }
}
